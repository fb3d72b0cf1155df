package relaysync

import (
	"encoding/hex"
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// ActionKind says what the manager must do for a relay.
type ActionKind uint8

const (
	// ActConnect: the relay is not known yet; open a connection. Its
	// filters are computed once it is connected.
	ActConnect ActionKind = iota
	// ActAddFilters: subscribe to new layer 2+3 items on a connected relay.
	ActAddFilters
)

// Action is one decision of ComputeActions.
type Action struct {
	Kind      ActionKind
	Relay     string
	Bootstrap bool
	// Items are the new item ranges; Addrs and Events their layer 2 and
	// layer 3 values; Filters those values at TagsPerFilter per filter.
	Items   []ItemRange
	Addrs   []string
	Events  []string
	Filters []nostr.Filter
}

// ComputeActions is the only place that decides which new subscriptions to
// open: per relay, targets − pending − confirmed. Relays not yet known get a
// Connect action; relays that are connecting or disconnected are skipped
// (they are recomputed when they connect). Output is ordered by relay URL.
func ComputeActions(repos *RepoSyncIndex, targets map[string]Targets, pending PendingSyncIndex, confirmed RelaySyncIndex, tagsPerFilter int) []Action {
	urls := make([]string, 0, len(targets))
	for u := range targets {
		urls = append(urls, u)
	}
	slices.Sort(urls)
	var actions []Action
	for _, u := range urls {
		t := targets[u]
		st := confirmed[u]
		if st == nil {
			actions = append(actions, Action{Kind: ActConnect, Relay: u, Bootstrap: t.Bootstrap})
			continue
		}
		if st.Status != Connected {
			continue
		}
		if a, ok := newItems(repos, u, t, pending[u], st, tagsPerFilter); ok {
			actions = append(actions, a)
		}
	}
	return actions
}

func newItems(repos *RepoSyncIndex, url string, t Targets, batches []*PendingBatch, st *RelayState, tagsPerFilter int) (Action, bool) {
	var inflight map[RepoID]uint32
	if len(batches) > 0 {
		inflight = map[RepoID]uint32{}
		for _, b := range batches {
			for _, it := range b.Items {
				inflight[it.Repo] = max(inflight[it.Repo], it.To)
			}
		}
	}
	var items []ItemRange
	nEvents := 0
	for _, r := range t.Repos {
		n := repos.Items(r)
		have := max(st.Confirmed[r], inflight[r])
		if have >= n {
			continue
		}
		items = append(items, ItemRange{Repo: r, From: have, To: n})
		nEvents += int(n - max(have, 1))
	}
	if len(items) == 0 {
		return Action{}, false
	}
	a := Action{Kind: ActAddFilters, Relay: url, Items: items}
	a.Addrs, a.Events = itemValues(repos, items, nEvents, t.rootsOnly())
	a.Filters = ItemFilters(a.Addrs, a.Events, tagsPerFilter, nil)
	return a, true
}

// rootsOnly is the set of repositories whose coordinate the relay is not
// asked for: those it serves only as a participant's write relay. A relay
// learned from anyone's relay list is asked for the replies to accepted
// root events (layer 3) and never for repository-wide filters (GRASP-03).
func (t Targets) rootsOnly() map[RepoID]struct{} {
	if len(t.OutboxRepos) == 0 {
		return nil
	}
	s := make(map[RepoID]struct{}, len(t.OutboxRepos))
	for _, r := range t.OutboxRepos {
		s[r] = struct{}{}
	}
	return s
}

// itemValues returns the coordinates and hex root ids of ranges; the
// coordinates of rootsOnly repositories are left out (their position 0 is
// still confirmed with the range). The ids are substrings of one hex
// string, so a relay's thousands of ids cost one allocation; ids shared by
// several repositories appear once.
func itemValues(repos *RepoSyncIndex, items []ItemRange, nEvents int, rootsOnly map[RepoID]struct{}) (addrs, events []string) {
	buf := make([]byte, 0, 64*nEvents)
	var seen map[uint32]struct{}
	for _, it := range items {
		if _, skip := rootsOnly[it.Repo]; it.From == 0 && !skip {
			addrs = append(addrs, repos.repos[it.Repo].addr)
		}
		roots := repos.repos[it.Repo].roots
		for p := max(it.From, 1); p < it.To; p++ {
			ei := roots[p-1]
			if repos.sharedEvent(ei) {
				if seen == nil {
					seen = map[uint32]struct{}{}
				}
				if _, dup := seen[ei]; dup {
					continue
				}
				seen[ei] = struct{}{}
			}
			buf = hex.AppendEncode(buf, repos.events[ei][:])
		}
	}
	all := string(buf)
	events = make([]string, len(all)/64)
	for i := range events {
		events[i] = all[i*64 : (i+1)*64]
	}
	return addrs, events
}
