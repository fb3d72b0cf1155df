// Package policy owns the acceptance pipeline every incoming event passes
// through, whether it comes from a client, a sync peer or purgatory:
// Options.Pre (core/server puts the operator's NIP-86 lists there,
// nip86.State.Accept) -> GRASP rules -> operator plugin chain -> verdict
// (reject, store, or hold in purgatory). The cheap event limits (size, tags,
// timestamps) are not part of it: core/relay checks them before Decide is
// called (checkEvent). It defines the Acceptor interface that plugins/
// implements; it never imports plugins/.
//
// The GRASP rules (Rules, built by New) implement grasp.md §3.1, §3.2 and
// §3.11: announcements must list this service (parsed URLs, exact
// host:port) unless GRASP-05 archive mode takes them (core/archive decides
// which repositories are hosted or archived here, and refuses what a
// read-only archive does not cover) or an accepted announcement of the
// identifier invites their author; states come only from the v3 roster of a known repository
// (core/roster, read by author: maintainers-v3.md); PRs need `c` and an accepted repository; everything else must
// tag or be tagged by an accepted repository or root event, within a bounded
// distance. Every refusal carries a NIP-01 prefix and says what to change.
//
// The rules decide; they never write. Side effects (create or retire a bare
// repo, replace or evict a held entry, align refs, what a held event waits
// for) are returned as Decision.Effects for the relay, purgatory and git
// packages to carry out.
//
// Deliberate differences from ngit-grasp:
//   - Issues, comments and statuses whose repository announcement (or root
//     PR/issue) is still in purgatory are held and released together with
//     it, instead of being refused as orphans until the first push (G01-R4x).
//   - Announcements with several clone/relays tags are merged, not refused.
//   - Reference chains are bounded (Options.MaxReferenceDepth); kind 10317
//     must carry at least one ws(s) `g` URL.
//   - Releases re-enter Decide with Meta.Source == SourcePurgatory; the rules
//     then skip the git-data checks (the releaser has them) but re-check
//     everything else, so a ban or deletion made meanwhile still applies.
package policy
