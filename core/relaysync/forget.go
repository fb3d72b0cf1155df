package relaysync

import (
	"slices"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Forget stops syncing the repository at address ("30617:<hex>:<d>"): its
// announcement expired from purgatory, was evicted, or was deleted (NIP-09).
// The repository and its root events leave RepoSyncIndex, every relay's
// confirmed and pending bookkeeping for it is dropped, and subscriptions
// that served nothing else are closed. A relay left with nothing to sync is
// closed by the next disconnect check, as when an announcement moves
// relays; bootstrap relays stay. If the announcement is observed again later
// it is synced from scratch. An unknown or malformed address is a no-op.
//
// Forget travels in the self-subscriber's batch, after everything observed
// before it: were it applied at once, an announcement stored a moment
// before its deletion and still waiting in the batch window would be
// re-added after the deletion had been applied.
func (m *Manager) Forget(address string) {
	if !strings.HasPrefix(address, "30617:") || !nip34.IsHex64(strings.SplitN(address[len("30617:"):], ":", 2)[0]) {
		return
	}
	m.enqueue(update{addr: address, forget: true})
}

// forget is the actor's side of Forget; changed is the batch's set of
// repositories awaiting relay selection, which must not name a freed id.
func (m *Manager) forget(addr string, changed map[RepoID]struct{}) {
	id, ok := m.repos.Lookup(addr)
	if !ok {
		return
	}
	delete(changed, id)
	delete(m.sel, addr)
	m.forgetPeople(id)
	for _, rs := range m.relays {
		m.forgetAt(rs, id)
	}
	roots := slices.Clone(m.repos.repos[id].roots)
	ids := make([][32]byte, len(roots))
	for i, ei := range roots {
		ids[i] = m.repos.events[ei]
	}
	m.repos.Remove(addr)
	m.forgetOutbox(roots, ids)
	m.log.Debug("forgot repository", "repo", addrRepo(addr).URLPath())
}

// forgetAt drops one relay's references to repo, whose id is about to be
// reused. Subscriptions are closed when every repository they were opened
// for is gone, which is exact for an incremental batch (often a single new
// repository) and conservative for a consolidation, whose filters pack many
// repositories: those keep the forgotten values until the next rebuild
// (consolidation, quick reconnect or the daily fresh sync rebuild from
// Confirmed, which no longer has them). Meanwhile they cost no extra filter
// slot and what they bring is refused by the policy pipeline like any event
// of an unknown repository.
func (m *Manager) forgetAt(rs *RelayState, repo RepoID) {
	delete(rs.Confirmed, repo)
	delete(rs.people, repo)
	rs.ahead = withoutRepo(rs.ahead, repo)
	if len(rs.ahead) == 0 {
		rs.ahead = nil
	}
	var emptied []*PendingBatch
	for _, b := range m.pending[rs.URL] {
		b.Items = withoutRepo(b.Items, repo)
		if len(b.Items) == 0 {
			emptied = append(emptied, b)
		}
	}
	for _, b := range emptied {
		m.removeBatch(rs.URL, b)
	}
	closed := 0
	for id, s := range rs.subs {
		if s.group == nil {
			continue // layer 1
		}
		delete(s.group.repos, repo)
		if len(s.group.repos) > 0 {
			continue
		}
		m.conns.Unsubscribe(rs.URL, id)
		delete(rs.subs, id)
		closed++
	}
	if closed > 0 {
		m.setFilters(rs, rs.Filters-closed)
	}
	if len(m.pending[rs.URL]) == 0 {
		// recomputeAll, which follows every batch, retries a deferred
		// AddFilters; with no batch pending it is no longer deferred.
		rs.deferred = false
	}
}

func withoutRepo(items []ItemRange, repo RepoID) []ItemRange {
	kept := items[:0]
	for _, it := range items {
		if it.Repo != repo {
			kept = append(kept, it)
		}
	}
	return kept
}

// subGroup is the set of repositories a set of subscriptions was opened
// for, shared by those subscriptions; Forget closes them when it empties.
type subGroup struct {
	repos map[RepoID]struct{}
}

func newSubGroup(items []ItemRange) *subGroup {
	g := &subGroup{repos: make(map[RepoID]struct{}, len(items))}
	for _, it := range items {
		g.repos[it.Repo] = struct{}{}
	}
	return g
}
