package relaysync

import (
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// ObserveHeld feeds the self-subscriber with a repository announcement that
// is still in purgatory (its git data has not arrived). Such a repository is
// synced at the "state only" level: its relays are connected, so their
// layer 1 stream (every announcement and state, full history on a fresh
// connection) brings its state events and replacements, but no layer 2+3
// filters are opened for it. Spam announcements that never receive git data
// thus cost a connection for at most the purgatory TTL, not filters and
// history fetches. When the announcement is stored, Observe of it promotes
// the repository to full sync, from scratch: a held repository never had
// items, so there is nothing to reset. A held announcement for a repository
// whose announcement is already stored changes nothing (the stored one
// governs until Forget). Other kinds are ignored.
//
// When it expires, is evicted or is deleted, call Forget, unless a stored
// announcement for the same coordinate exists.
func (m *Manager) ObserveHeld(evt *nostr.Event) {
	if evt == nil || evt.Kind != nip34.KindAnnouncement {
		return
	}
	u, ok := m.parse(evt)
	if !ok {
		return
	}
	u.held = true
	m.enqueue(u)
}

// HoldAnnouncement records the relays of a held announcement, like
// SetAnnouncement, unless the repository's announcement is already stored;
// it reports the id and whether anything was recorded.
func (x *RepoSyncIndex) HoldAnnouncement(addr string, relays []string, listsSelf bool) (RepoID, bool) {
	if id, ok := x.byAddr[addr]; ok && x.repos[id].announced && !x.repos[id].held {
		return id, false
	}
	id := x.SetAnnouncement(addr, relays, listsSelf)
	x.repos[id].held = true
	return id, true
}

// Held reports whether the repository is announced only from purgatory.
func (x *RepoSyncIndex) Held(id RepoID) bool { return x.repos[id].held }
