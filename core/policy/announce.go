package policy

import (
	"context"
	"fmt"
	"strings"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/nbd-wtf/go-nostr"
)

// announcement applies G01-R2/R2x/R3, the repository lists and the quota to
// a kind-30617 event, in ngit-grasp's order (grasp.md §5.1): repository
// blacklist, lists-service and whitelist, maintainer exception.
func (r *Rules) announcement(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	a, err := nip34.ParseAnnouncement(evt)
	if err != nil {
		return reject("invalid: repository announcement: %v", err)
	}
	if r.repoBlack.match(a.Pubkey, a.Identifier) {
		return reject("blocked: %s is blacklisted on this server", r.repoBlack.why(a.Pubkey, a.Identifier))
	}
	release := meta.Source == SourcePurgatory
	if d, stop := r.resubmitted(ctx, evt, release); stop {
		return d
	}
	if d, bad := r.futureDated(evt); bad {
		return d
	}
	v := r.view(ctx, a.Identifier, evt.ID)
	repo := a.Repo()
	prevE, hasPrev := v.Latest(a.Pubkey)
	if err := v.Err(); err != nil {
		return r.internal("load repository announcements", evt, err)
	}
	prev := prevE.Announcement
	prevHeld := hasPrev && prevE.Held
	prevStored := hasPrev && !prevHeld
	if hasPrev && nip34.Later(int64(prev.CreatedAt), prev.EventID, int64(a.CreatedAt), a.EventID) {
		// Replaceable-event order: an older version changes nothing, and
		// must not trigger the effects of a replacement (a stale copy from
		// a sync peer dropping this service would otherwise evict the repo).
		return Decision{Outcome: Shadow, Msg: "duplicate: a newer announcement for this repository exists"}
	}
	prevHosted := hasPrev && r.hosted(v, prev)

	verdict := r.verdict(v, a)
	if verdict.HasRepo() {
		archived := verdict == archive.Archived
		// The repository whitelist chooses among repositories that list
		// this server; the archive scope is its own choice (core/archive).
		if !archived && !r.repoWhite.empty() && !r.repoWhite.match(a.Pubkey, a.Identifier) {
			return reject("restricted: repository %s/%s is not on this server's whitelist", nip34.Npub(a.Pubkey), a.Identifier)
		}
		if !prevHosted {
			if d, over := r.overQuota(ctx, evt, a); over {
				return d
			}
		}
		var effects []Effect
		if !prevHosted && !release { // a released repo already has its bare repo
			effects = append(effects, Effect{Kind: CreateRepo, Repo: repo})
		}
		var d Decision
		switch {
		case prevStored:
			// Replacing a served announcement: served at once (§4.1).
			d = Decision{Outcome: Store, Effects: effects}
		case release:
			d = Decision{Outcome: Store, Effects: effects}
		case prevHeld:
			d = hold(append(effects, Effect{Kind: ReplaceHeld, Repo: repo})...)
		default:
			d = hold(effects...)
			d.Invited = r.invitedByServed(v, a)
			if err := v.Err(); err != nil {
				return r.internal("load repository announcements", evt, err)
			}
		}
		d.Archived = archived
		return d
	}

	// Not listing this service: accepted, without a bare repo, when an
	// accepted announcement of this identifier names its author in an M, m,
	// o or maintainers entry (G01-R2x as maintainers-v3.md §3 [R]): an
	// invitee's acceptance and a moderator's acknowledgement usually do not
	// list this server. The inviters are found from the keys it names.
	var retire []Effect
	if prevHosted {
		if prevHeld {
			retire = append(retire, Effect{Kind: EvictHeld, Repo: repo})
		}
		retire = append(retire, Effect{Kind: RemoveRepo, Repo: repo})
	}
	storedHost, heldHost := nip34.RepoRef{}, nip34.RepoRef{}
	for _, h := range v.Inviters(a) {
		switch {
		case !h.Held:
			storedHost = h.Repo()
		case r.hosted(v, h.Announcement):
			// Released with the held repository that invites it.
			heldHost = h.Repo()
		}
	}
	if err := v.Err(); err != nil {
		return r.internal("load repository announcements", evt, err)
	}
	switch {
	case !storedHost.IsZero() || (release && !heldHost.IsZero()):
		return Decision{Outcome: Store, Effects: append(retire, Effect{Kind: NoRepo, Repo: repo})}
	case !heldHost.IsZero():
		// The repository it maintains is itself in purgatory: held with it
		// and released together.
		effects := append(retire, Effect{Kind: NoRepo, Repo: repo}, Effect{Kind: AwaitRepo, Repo: heldHost})
		if prevHeld && !prevHosted {
			effects = append(effects, Effect{Kind: ReplaceHeld, Repo: repo})
		}
		return hold(effects...)
	}
	d := reject("invalid: %s", r.notListedReason(a))
	if verdict == archive.OutOfScope {
		r.opts.Archive.Refused(archive.RefusedOutOfScope)
		d.Msg = r.opts.Archive.OutOfScopeMessage(a)
	}
	d.Effects = retire
	return d
}

// invitedByServed reports whether a served (not held) announcement of a's
// identifier by another author names a's author (audit F31): an owner's
// invitation is what exempts a from the per-identifier held cap. Held
// inviters do not count: anyone can have an announcement held.
func (r *Rules) invitedByServed(v *roster.View, a nip34.Announcement) bool {
	for _, h := range v.Inviters(a) {
		if !h.Held {
			return true
		}
	}
	return false
}

// notListedReason says exactly what the author must add.
func (r *Rules) notListedReason(a nip34.Announcement) string {
	svc := r.opts.Service
	clone, relay := nip34.ListsServiceParts(a, svc)
	var missing []string
	if !clone {
		missing = append(missing, fmt.Sprintf("a 'clone' URL %s", svc.CloneURL(a.Pubkey, a.Identifier)))
	}
	if !relay {
		missing = append(missing, fmt.Sprintf("a 'relays' URL %s", svc.RelayURL()))
	}
	return fmt.Sprintf("announcement must list this service in both 'clone' and 'relays' tags; add %s (found clone %s, relays %s)",
		strings.Join(missing, " and "), quoteList(a.Clone), quoteList(a.Relays))
}

// overQuota enforces MaxReposPerPubkey over the author's hosted
// repositories, stored and held, other than this identifier.
func (r *Rules) overQuota(ctx context.Context, evt *nostr.Event, a nip34.Announcement) (Decision, bool) {
	limit := r.opts.MaxReposPerPubkey
	if limit <= 0 {
		return Decision{}, false
	}
	f := nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Authors: []string{a.Pubkey}}
	st, err := r.stored(ctx, f)
	if err != nil {
		return r.internal("count repositories", evt, err), true
	}
	hd, err := r.held(ctx, f)
	if err != nil {
		return r.internal("count repositories", evt, err), true
	}
	ids := map[string]bool{}
	for _, e := range append(st, hd...) {
		other, err := nip34.ParseAnnouncement(e)
		if err == nil && other.Identifier != a.Identifier && r.hosted(r.view(ctx, other.Identifier, ""), other) {
			ids[other.Identifier] = true
		}
	}
	if len(ids) >= limit {
		return reject("restricted: %s already hosts %d repositories here, the limit per author", nip34.Npub(a.Pubkey), len(ids)), true
	}
	return Decision{}, false
}
