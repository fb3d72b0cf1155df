// Package purgatory owns events held until their git data exists: their
// durable record (it survives kill -9), their release and expiry, NIP-09
// deletions of them, the refs/nostr/<id> placeholders pushed before their
// PR event, the quotas of what strangers may park here (held events,
// placeholders, GRASP-06 /prs/ data), the prune schedule of repositories
// that lost data, and following another instance's changes to all of that
// on a shared PostgreSQL side table. Its subpackage hunt fetches missing
// objects from a repository's other git servers.
//
// One file per act: hold.go, release.go, remove.go (removals and NIP-09
// deletions), sweep.go (expiry), placeholders.go, reload.go (another
// instance's changes), read.go (what the write path and the pages ask),
// load.go (start-up), and the quotas beside them. inflight.go is how no
// act holds purgatory's lock across a durable write: an act decides under
// the lock, writes with only its own keys claimed, and shows the result
// under the lock again.
//
// Whoever needs to follow what is held (GRASP-02 sync) appends to its
// OnHold and OnRemove hooks instead of polling it.
//
// It must never decide acceptance (core/policy does), never touch git data
// itself (core/hosting does, through git.Repos), never show an entry before
// it is durable, and never hold its lock while the side table commits.
package purgatory
