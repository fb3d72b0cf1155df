package roster

import (
	"sync"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Recently rejected states, kept to re-evaluate when an announcement of
// their identifier changes (maintainers-v3.md §3 [R]): an invitee often
// publishes its acceptance and its first state together, and the state may
// arrive first. The index is in memory and bounded (per identifier and in
// total, oldest dropped first, RejectedTTL): losing it on a restart loses
// only the automatic retry — the author's client republishes the state with
// its next push, and sync fetches it again from the repository's relays.
//
// With several instances on one store each keeps the states it refused:
// an announcement another instance stored or holds re-runs them here too
// (core/server's fan-out calls hosting.Recheck), so which instance took
// the state and which the announcement does not matter (issue 24 part 8).
const (
	RejectedTTL      = 10 * time.Minute
	rejectedPerD     = 16
	rejectedTotalMax = 4096
)

type rejectedIndex struct {
	mu    sync.Mutex
	byD   map[string][]rejected
	total int
}

type rejected struct {
	evt *nostr.Event
	at  time.Time
}

// RememberRejected keeps a refused 30618 for re-evaluation.
func (s *Source) RememberRejected(evt *nostr.Event) {
	if evt == nil || evt.Kind != nip34.KindState {
		return
	}
	d := evt.Tags.GetD()
	now := s.clk.Now()
	x := &s.rejected
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byD == nil {
		x.byD = map[string][]rejected{}
	}
	list := x.byD[d]
	for _, r := range list {
		if r.evt.ID == evt.ID {
			return
		}
	}
	if len(list) >= rejectedPerD {
		list = list[1:]
		x.total--
	}
	if x.total >= rejectedTotalMax {
		// The oldest may be d's own: read d's list again after evicting,
		// or the evicted entry comes back uncounted.
		x.byD[d] = list
		x.evictOldest()
		list = x.byD[d]
	}
	x.byD[d] = append(list, rejected{evt: evt, at: now})
	x.total++
}

// TakeRejected returns (and forgets) the states of identifier d refused in
// the last RejectedTTL.
func (s *Source) TakeRejected(d string) []*nostr.Event {
	now := s.clk.Now()
	x := &s.rejected
	x.mu.Lock()
	defer x.mu.Unlock()
	list := x.byD[d]
	delete(x.byD, d)
	x.total -= len(list)
	var out []*nostr.Event
	for _, r := range list {
		if now.Sub(r.at) <= RejectedTTL {
			out = append(out, r.evt)
		}
	}
	return out
}

func (x *rejectedIndex) evictOldest() {
	var oldD string
	var oldAt time.Time
	for d, list := range x.byD {
		if len(list) > 0 && (oldD == "" || list[0].at.Before(oldAt)) {
			oldD, oldAt = d, list[0].at
		}
	}
	if oldD == "" {
		return
	}
	x.byD[oldD] = x.byD[oldD][1:]
	if len(x.byD[oldD]) == 0 {
		delete(x.byD, oldD)
	}
	x.total--
}
