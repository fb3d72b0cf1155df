// Package nip34 owns grasp's model of NIP-34 git-collaboration events:
// repository announcements (30617) and states (30618), patches, PRs, PR
// updates, issues, statuses, NIP-22 comments and user grasp lists (10317);
// repository coordinates ("30617:<hex>:<d>"); identifier validation and
// percent-encoding; the "does this announcement list this service" check;
// the v3 maintainer roster (Resolve, maintainers-v3.md) and the one ordering
// of replaceable events (Later); and the tag references other packages use to
// decide what an event belongs to.
//
// It is pure: no I/O, no clock, and it imports nothing of ours, so every
// other package (policy, git, purgatory, sync) can share one reading of the
// same tags. The parsers are our own rather than go-nostr's nip34 helpers,
// because those drop peeled tags, refs outside heads/tags, repeated
// multi-value tags and HEAD without "ref: " (reference/libraries.md §4).
package nip34
