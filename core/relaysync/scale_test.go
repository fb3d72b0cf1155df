package relaysync

import (
	"runtime"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

const selfURL = "wss://self.example"

func relayURL(i int) string { return "wss://relay" + itoa(i) + ".example" }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}

// buildIndex is the seed's scale shape: every repo lists this server and
// perRepo of nRelays relays, and has roots root events.
func buildIndex(tb testing.TB, repos, roots, nRelays, perRepo int) *RepoSyncIndex {
	x := NewRepoSyncIndex()
	id := 0
	for r := 0; r < repos; r++ {
		relays := []string{selfURL}
		for j := 0; j < perRepo; j++ {
			relays = append(relays, relayURL((r*7+j*13)%nRelays))
		}
		x.SetAnnouncement(repoAddr(r), relays, true)
		for e := 0; e < roots; e++ {
			id++
			if _, err := x.AddRootEvent(repoAddr(r), hexID(id)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return x
}

func connectedAll(targets map[string]Targets) RelaySyncIndex {
	idx := RelaySyncIndex{}
	for u := range targets {
		rs := newRelayState(u, false)
		rs.Status = Connected
		idx[u] = rs
	}
	return idx
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// benchState builds the whole sync state (RepoSyncIndex, targets and a fully
// confirmed RelaySyncIndex) and reports its retained heap.
func benchState(b *testing.B, repos, roots, nRelays int) {
	b.ReportAllocs()
	var mb float64
	for i := 0; i < b.N; i++ {
		before := heapInUse()
		x := buildIndex(b, repos, roots, nRelays, 5)
		targets, _ := DeriveRelayTargets(x, TargetRules{Self: []string{selfURL}})
		confirmed := connectedAll(targets)
		for u, t := range targets {
			for _, r := range t.Repos {
				confirmed[u].Confirmed[r] = x.Items(r)
			}
		}
		after := heapInUse()
		mb = float64(after-before) / (1 << 20)
		runtime.KeepAlive(x)
		runtime.KeepAlive(confirmed)
	}
	b.ReportMetric(mb, "state-MB")
}

// benchCompute times ComputeActions for a fresh start (every relay connected,
// nothing confirmed: all filters built) and reports, as a ratio, how it
// compares with the steady state (everything confirmed, one new root event)
// measured in the same run, plus the largest packed connection.
func benchCompute(b *testing.B, repos, roots, nRelays int) {
	x := buildIndex(b, repos, roots, nRelays, 5)
	targets, _ := DeriveRelayTargets(x, TargetRules{Self: []string{selfURL}})
	fresh := connectedAll(targets)
	b.ResetTimer()
	var filters int
	for i := 0; i < b.N; i++ {
		acts := ComputeActions(x, targets, nil, fresh, 100)
		filters = 0
		for _, a := range acts {
			filters += len(a.Filters)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/compute")
	b.ReportMetric(float64(filters), "filters-built")
	b.ReportMetric(float64(maxPackedFilters(x, targets, 70)), "max-filters/conn")
}

// maxPackedFilters is the largest connection once every relay's full target
// set has been consolidated (layer 1 + packed layers 2+3).
func maxPackedFilters(x *RepoSyncIndex, targets map[string]Targets, limit int) int {
	worst := 0
	for _, t := range targets {
		ev := 0
		for _, r := range t.Repos {
			ev += int(x.Items(r)) - 1
		}
		k := PackSize([]ItemCount{{len(t.Repos), ev}}, (limit-1)/2, 100)
		worst = max(worst, 1+FilterCount(len(t.Repos), ev, k))
	}
	return worst
}

func BenchmarkSyncState1x(b *testing.B)       { benchState(b, 1000, 50, 100) }
func BenchmarkSyncState10x(b *testing.B)      { benchState(b, 10000, 50, 500) }
func BenchmarkComputeActions1x(b *testing.B)  { benchCompute(b, 1000, 50, 100) }
func BenchmarkComputeActions10x(b *testing.B) { benchCompute(b, 10000, 50, 500) }

// TestG02_FiltersPerConnectionNeverExceedLimit drives the actor at the
// seed's per-relay density (50 repos and 2,500 root events per relay, which
// is 79 filters at 100 per filter) and checks the invariant after every step.
func TestG02_FiltersPerConnectionNeverExceedLimit(t *testing.T) {
	h := newHarness(t, nil)
	const repos, roots, nRelays = 100, 50, 10
	var evts []*nostr.Event
	id := 0
	for r := 0; r < repos; r++ {
		relays := []string{selfURL}
		for j := 0; j < 5; j++ {
			relays = append(relays, relayURL((r*7+j*13)%nRelays))
		}
		evts = append(evts, announcement(r, relays...))
		for e := 0; e < roots; e++ {
			id++
			evts = append(evts, rootEvent(1617, id, r))
		}
	}
	check := func(step string) {
		t.Helper()
		for _, r := range h.snap().Relays {
			if r.Filters > 70 {
				t.Fatalf("%s: %s has %d filters", step, r.URL, r.Filters)
			}
		}
	}
	h.observe(evts...)
	for _, c := range ops(h.conns.take(), "connect") {
		h.m.Connected(c.url)
	}
	check("initial")
	h.finish(h.conns.take())
	check("confirmed")
	// Trickle new root events in many small batches: each adds filters
	// until a consolidation repacks the connection.
	for round := 0; round < 30; round++ {
		var more []*nostr.Event
		for r := 0; r < repos; r += 9 {
			id++
			more = append(more, rootEvent(1621, id, r))
		}
		h.observe(more...)
		check("trickle")
		h.finish(h.conns.take())
		check("trickle confirmed")
	}
	s := h.snap()
	for _, r := range s.Relays {
		if r.PendingBatches != 0 || r.ConfirmedRepos == 0 {
			t.Fatalf("relay not fully confirmed: %+v", r)
		}
	}
	total := 0
	for _, r := range s.Relays {
		total += r.ConfirmedEvents
	}
	if want := (repos*roots + 30*12) * 5; total != want {
		t.Fatalf("confirmed %d relay×event pairs, want %d", total, want)
	}
}
