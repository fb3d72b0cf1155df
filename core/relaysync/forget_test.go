package relaysync

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

const (
	r2   = "wss://r2.example"
	boot = "wss://boot.example"
)

// check runs the disconnect check as its own actor message, so the test does
// not depend on whether a ticker tick or a snapshot request is served first.
func (h *harness) check() {
	h.m.send(h.m.checkRelays)
	h.snap()
}

// forget calls Forget and lets the batch window pass.
func (h *harness) forget(addr string) {
	h.m.Forget(addr)
	h.clk.Advance(h.m.o.Config.BatchWindow.D())
	h.snap()
}

func (h *harness) connectAll(calls []call) {
	for _, c := range ops(calls, "connect") {
		h.m.Connected(c.url)
	}
	h.snap()
}

// values is every tag value the item subscriptions in calls filter on.
func values(t *testing.T, calls []call) []string {
	var out []string
	for _, c := range calls {
		for _, f := range c.filters {
			if len(f.Kinds) > 0 {
				continue
			}
			_, v := tagValues(t, f)
			out = append(out, v...)
		}
	}
	return out
}

func subsOn(calls []call, url string) []call {
	var out []call
	for _, c := range calls {
		if c.url == url && c.op == "sub" {
			out = append(out, c)
		}
	}
	return out
}

// twoRepos syncs repo 0 (r1, r2 and the bootstrap relay, roots 1..3) and
// repo 1 (r2 only, roots 4..5) to confirmation. r2's first batch serves both.
func twoRepos(h *harness) []call {
	h.t.Helper()
	h.snap()
	h.take1("connect") // bootstrap
	h.m.Connected(boot)
	h.snap()
	h.conns.take()
	h.observe(announcement(0, selfURL, r1, r2, boot), announcement(1, selfURL, r2),
		rootEvent(1617, 1, 0), rootEvent(1618, 2, 0), rootEvent(1621, 3, 0),
		rootEvent(1621, 4, 1), rootEvent(1621, 5, 1))
	calls := h.conns.take() // the bootstrap relay subscribes at once
	h.connectAll(calls)
	calls = append(calls, h.conns.take()...)
	h.finish(calls)
	for _, u := range []string{r1, r2, boot} {
		if r := h.relay(u); r.PendingBatches != 0 || r.ConfirmedRepos == 0 {
			h.t.Fatalf("setup: %s not confirmed: %+v", u, r)
		}
	}
	return calls
}

func TestG02_ForgetClosesItsSubscriptionsAndIdleRelays(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.BootstrapRelays = []string{boot} })
	setup := twoRepos(h)
	h.forget(repoAddr(0))
	calls := h.conns.take()
	// r1 and the bootstrap relay opened one batch for repo 0 alone: all six
	// of its item subscriptions go; r2's batch also serves repo 1 and stays.
	for _, u := range []string{r1, boot} {
		_, items := split(subsOn(setup, u))
		var want, got []string
		for _, c := range items {
			want = append(want, c.sub)
		}
		for _, c := range ops(calls, "unsub") {
			if c.url == u {
				got = append(got, c.sub)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if len(want) != 6 || !slices.Equal(got, want) {
			t.Fatalf("%s: unsubscribed %v, want the item subscriptions %v", u, got, want)
		}
		if r := h.relay(u); r.Filters != 1 || r.ConfirmedRepos != 0 {
			t.Fatalf("%s after forget: %+v", u, r)
		}
	}
	if len(calls) != 12 {
		t.Fatalf("forget made %d calls, want the 12 unsubscribes: %+v", len(calls), calls)
	}
	if r := h.relay(r2); r.Filters != 7 || r.ConfirmedRepos != 1 || r.ConfirmedEvents != 2 {
		t.Fatalf("r2 after forget: %+v", r)
	}
	if s := h.snap(); s.Repos != 1 || s.RootEvents != 2 {
		t.Fatalf("index after forget: %+v", s)
	}

	// The disconnect check closes r1, which served only repo 0, and keeps
	// the bootstrap relay, which is connected for discovery regardless.
	h.check()
	if c := h.conns.take(); len(c) != 1 || c[0].op != "close" || c[0].url != r1 {
		t.Fatalf("disconnect check calls %+v, want close r1", c)
	}
	var tracked []string
	for _, r := range h.snap().Relays {
		tracked = append(tracked, r.URL)
	}
	if !slices.Equal(tracked, []string{boot, r2}) {
		t.Fatalf("tracked relays %v", tracked)
	}

	// r2's next rebuild (a quick reconnect) no longer carries repo 0.
	h.m.Disconnected(r2, nil)
	h.snap()
	h.take1("connect")
	h.m.Connected(r2)
	h.snap()
	_, items := split(h.conns.take())
	got := values(t, items)
	slices.Sort(got)
	got = slices.Compact(got)
	if want := []string{hexID(4), hexID(5), repoAddr(1)}; !slices.Equal(got, want) {
		t.Fatalf("r2 rebuilt with %v, want only repo 1's %v", got, want)
	}
}

func TestG02_ForgottenRepoComesBackFromScratch(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.BootstrapRelays = []string{boot} })
	twoRepos(h)
	h.forget(repoAddr(0))
	h.check()
	h.conns.take()
	h.observe(announcement(0, selfURL, r1, r2, boot), rootEvent(1617, 1, 0))
	calls := h.conns.take()
	if c := ops(calls, "connect"); len(c) != 1 || c[0].url != r1 {
		t.Fatalf("re-observed repo: connects %+v, want r1 again", c)
	}
	h.m.Connected(r1)
	h.snap()
	calls = append(calls, h.conns.take()...)
	want := []string{hexID(1), repoAddr(0)}
	for _, u := range []string{r1, r2, boot} {
		_, items := split(subsOn(calls, u))
		got := values(t, items)
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s resubscribed %v, want repo 0 from scratch %v", u, got, want)
		}
		for _, c := range items {
			if c.filters[0].Since != nil {
				t.Fatalf("%s: re-observed repo synced with since: %+v", u, c)
			}
		}
	}
	h.finish(calls)
	if r := h.relay(r2); r.ConfirmedRepos != 2 || r.ConfirmedEvents != 3 {
		t.Fatalf("r2 after resync %+v", r)
	}
}

// A new repository may get the forgotten one's id: it must not inherit its
// confirmed state on a relay that stayed connected.
func TestG02_ForgetIDReuseStartsClean(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(announcement(0, selfURL, r1), announcement(1, selfURL, r1), rootEvent(1617, 1, 0), rootEvent(1617, 2, 0))
	h.connectAll(h.conns.take())
	h.finish(h.conns.take())
	if r := h.relay(r1); r.ConfirmedRepos != 2 || r.ConfirmedEvents != 2 {
		t.Fatalf("setup %+v", r)
	}
	h.forget(repoAddr(0))
	h.conns.take()
	id0 := RepoID(0)
	h.observe(announcement(7, selfURL, r1))
	reply := make(chan RepoID, 1)
	h.m.send(func() { id, _ := h.m.repos.Lookup(repoAddr(7)); reply <- id })
	if got := <-reply; got != id0 {
		t.Fatalf("new repo got id %d; the test wants the freed id %d", got, id0)
	}
	_, items := split(h.conns.take())
	if got := values(t, items); !slices.Equal(got, []string{repoAddr(7), repoAddr(7), repoAddr(7)}) {
		t.Fatalf("new repo on a reused id subscribed %v, want its coordinate", got)
	}
	if r := h.relay(r1); r.ConfirmedRepos != 1 || r.PendingBatches != 1 {
		t.Fatalf("reused id inherited state: %+v", r)
	}
}

func TestG02_ForgetDuringPendingBatch(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(announcement(0, selfURL, r1), rootEvent(1617, 1, 0))
	h.connectAll(h.conns.take())
	h.conns.take()
	// Two batches pending: repo 1 alone, then repos 0 and 2 together.
	h.observe(announcement(1, selfURL, r1))
	lone := h.conns.take()
	h.observe(announcement(2, selfURL, r1), rootEvent(1621, 2, 0))
	mixed := h.conns.take()
	if r := h.relay(r1); r.PendingBatches != 3 {
		t.Fatalf("setup %+v", r)
	}
	h.forget(repoAddr(1))
	h.forget(repoAddr(0))
	unsubs := ops(h.conns.take(), "unsub")
	// repo 0's own batch and repo 1's batch are closed; the mixed batch keeps
	// its subscriptions for repo 2.
	if len(unsubs) != 6+3 {
		t.Fatalf("%d unsubscribes, want 9", len(unsubs))
	}
	for _, u := range unsubs {
		for _, c := range mixed {
			if c.sub == u.sub {
				t.Fatalf("closed %s of the batch that still serves repo 2", u.sub)
			}
		}
	}
	if r := h.relay(r1); r.PendingBatches != 1 || r.Filters != 1+6 {
		t.Fatalf("after forget %+v", r)
	}
	h.finish(lone) // late EOSE of closed subscriptions changes nothing
	if r := h.relay(r1); r.PendingBatches != 1 || r.ConfirmedRepos != 0 {
		t.Fatalf("after late EOSE %+v", r)
	}
	h.finish(mixed)
	if r := h.relay(r1); r.PendingBatches != 0 || r.ConfirmedRepos != 1 || r.ConfirmedEvents != 0 {
		t.Fatalf("mixed batch confirmed %+v, want only repo 2", r)
	}
}

func TestG02_ForgetIsOrderedWithObserve(t *testing.T) {
	h := newHarness(t, nil)
	// Stored then deleted within one batch window: never synced.
	h.m.Observe(announcement(0, selfURL, r1))
	h.forget(repoAddr(0))
	if c := h.conns.take(); len(c) != 0 || h.snap().Repos != 0 {
		t.Fatalf("deleted announcement synced: %+v", c)
	}
	// Deleted then announced again: synced.
	h.m.Forget(repoAddr(0))
	h.observe(announcement(0, selfURL, r1))
	h.take1("connect")
}

func TestG02_ForgetUnknownOrMalformedIsNoop(t *testing.T) {
	h := newHarness(t, nil)
	h.initialSync(2)
	before := h.snap()
	for _, a := range []string{repoAddr(5), "30617:nothex:x", "30618:" + pubkey(0) + ":repo0", "", "30617:"} {
		h.forget(a)
	}
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("no-op forget made calls %+v", c)
	}
	if after := h.snap(); after.Repos != before.Repos || after.RootEvents != before.RootEvents || h.relay(r1).ConfirmedEvents != 2 {
		t.Fatalf("state changed: %+v -> %+v", before, after)
	}
}

// Consolidated subscriptions pack many repositories: forgetting one keeps
// them open (no churn) and the next rebuild leaves its values out.
func TestG02_ForgetThenConsolidationDropsValues(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.ConsolidateAbove = 25; o.Config.TagsPerFilter = 2 })
	var evts []*nostr.Event
	for r := 0; r < 3; r++ {
		evts = append(evts, announcement(r, selfURL, r1), rootEvent(1617, 10+r, r))
	}
	h.observe(evts...)
	h.connectAll(h.conns.take())
	h.finish(h.conns.take()) // 1 + 3×(2+2) = 13 filters
	for i := 20; i < 30; i++ {
		h.observe(rootEvent(1621, i, 2)) // one batch each until consolidation
		h.finish(h.conns.take())
	}
	if r := h.relay(r1); r.Filters > 25 || r.ConfirmedEvents != 13 {
		t.Fatalf("setup %+v", r)
	}
	h.forget(repoAddr(1))
	h.conns.take()
	// A daily fresh sync is a full rebuild from the index.
	h.clk.Advance(25 * time.Hour)
	h.snap()
	_, items := split(h.conns.take())
	for _, v := range values(t, items) {
		if v == repoAddr(1) || v == hexID(11) {
			t.Fatalf("rebuild still filters on forgotten repo value %s", v)
		}
	}
	if len(items) == 0 {
		t.Fatal("no rebuild")
	}
}

func TestG02_ForgetSharedRootEventStaysForOtherRepo(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(announcement(0, selfURL, r1), announcement(1, selfURL, r1), rootEvent(1617, 1, 0, 1))
	h.connectAll(h.conns.take())
	h.finish(h.conns.take())
	h.forget(repoAddr(0))
	if s := h.snap(); s.Repos != 1 || s.RootEvents != 1 {
		t.Fatalf("index %+v, want repo 1 and the shared event", s)
	}
	h.m.Disconnected(r1, nil)
	h.snap()
	h.conns.take()
	h.m.Connected(r1)
	h.snap()
	_, items := split(h.conns.take())
	got := values(t, items)
	slices.Sort(got)
	got = slices.Compact(got)
	if want := []string{hexID(1), repoAddr(1)}; !slices.Equal(got, want) {
		t.Fatalf("rebuilt %v, want %v", got, want)
	}
}

func TestG02_ForgetThousandReposEmptiesManager(t *testing.T) {
	h := newHarness(t, nil)
	const n = 1000
	var evts []*nostr.Event
	for r := 0; r < n; r++ {
		evts = append(evts, announcement(r, selfURL, relayURL(r%20)), rootEvent(1617, r+1, r))
	}
	h.observe(evts...)
	h.connectAll(h.conns.take())
	h.finish(h.conns.take())
	for r := 0; r < n; r++ {
		h.m.Forget(repoAddr(r))
	}
	h.clk.Advance(h.m.o.Config.BatchWindow.D())
	h.check()
	s := h.snap()
	if s.Repos != 0 || s.RootEvents != 0 || len(s.Relays) != 0 {
		t.Fatalf("after forgetting every repo: %d repos, %d events, %d relays", s.Repos, s.RootEvents, len(s.Relays))
	}
	reply := make(chan bool, 1)
	h.m.send(func() { reply <- indexEmpty(h.m.repos) })
	if !<-reply {
		t.Fatal("index internals not released")
	}
	if c := ops(h.conns.take(), "close"); len(c) != 20 {
		t.Fatalf("closed %d relays, want 20", len(c))
	}
}

func indexEmpty(x *RepoSyncIndex) bool {
	return len(x.byAddr) == 0 && len(x.repos) == 0 && len(x.freeRepos) == 0 &&
		len(x.relayByURL) == 0 && len(x.relayURLs) == 0 && len(x.freeRelays) == 0 &&
		x.eventIdx.Len() == 0 && x.eventIdx.Slots() == 0 && len(x.events) == 0 &&
		len(x.eventMore) == 0 && len(x.freeEvents) == 0
}

func TestRepoSyncIndexRemove(t *testing.T) {
	x := buildIndex(t, 1000, 5, 50, 3)
	// shared events and an 8-byte prefix collision
	collide := strings.Repeat("0", 62) + "aa"
	other := strings.Repeat("0", 62) + "bb"
	for _, id := range []string{hexID(1), collide, other} {
		if _, err := x.AddRootEvent(repoAddr(999), id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := x.AddRootEvent(repoAddr(998), collide); err != nil {
		t.Fatal(err)
	}
	slots := len(x.repos)
	// Forget 90%: the rest must read back exactly as before. hexID(1) stays:
	// repo 999 shares it.
	want := map[string][]string{}
	for r := 900; r < 1000; r++ {
		id, _ := x.Lookup(repoAddr(r))
		want[repoAddr(r)] = append(x.RootEvents(id), x.Relays(id)...)
	}
	for r := 0; r < 900; r++ {
		if _, ok := x.Remove(repoAddr(r)); !ok {
			t.Fatalf("remove %d: unknown", r)
		}
	}
	if _, ok := x.Remove(repoAddr(0)); ok {
		t.Fatal("removed twice")
	}
	if x.Len() != 100 || x.RootEventCount() != 100*5+3 {
		t.Fatalf("len %d events %d", x.Len(), x.RootEventCount())
	}
	// Each lookup map was rebuilt on the way down: none has seen more
	// deletes since than it holds entries.
	if x.delAddrs >= x.Len() || x.delEvents >= x.RootEventCount() || x.delRelays >= len(x.relayByURL) {
		t.Fatalf("lookup maps not rebuilt: %d/%d/%d deletes since", x.delAddrs, x.delEvents, x.delRelays)
	}
	for addr, w := range want {
		id, ok := x.Lookup(addr)
		if !ok || !slices.Equal(append(x.RootEvents(id), x.Relays(id)...), w) {
			t.Fatalf("%s reads %v, want %v", addr, append(x.RootEvents(id), x.Relays(id)...), w)
		}
	}
	r999, _ := x.Lookup(repoAddr(999))
	if e, ok := x.findEvent(rawID(t, other)); !ok || x.events[e] != rawID(t, other) {
		t.Fatal("prefix-colliding event lost")
	}
	// Shared: removing 998 leaves collide to 999 alone.
	x.Remove(repoAddr(998))
	e, _ := x.findEvent(rawID(t, collide))
	if x.sharedEvent(e) || x.eventRepo[e] != r999 {
		t.Fatalf("shared event owners not updated")
	}
	// New repositories reuse freed positions instead of growing.
	for r := 0; r < 500; r++ {
		x.SetAnnouncement(repoAddr(2000+r), []string{relayURL(r)}, true)
	}
	if len(x.repos) != slots {
		t.Fatalf("repos slice grew from %d to %d despite free positions", slots, len(x.repos))
	}
	for r := 900; r < 1000; r++ {
		x.Remove(repoAddr(r))
	}
	for r := 0; r < 500; r++ {
		x.Remove(repoAddr(2000 + r))
	}
	if !indexEmpty(x) {
		t.Fatal("empty index kept its storage")
	}
}

func rawID(t *testing.T, h string) [32]byte {
	t.Helper()
	var raw [32]byte
	for i := range raw {
		var b byte
		for _, c := range h[2*i : 2*i+2] {
			b <<= 4
			switch {
			case c >= '0' && c <= '9':
				b |= byte(c - '0')
			default:
				b |= byte(c-'a') + 10
			}
		}
		raw[i] = b
	}
	return raw
}

func TestRepoSyncIndexRelayInterningFollowsAnnouncements(t *testing.T) {
	x := NewRepoSyncIndex()
	x.SetAnnouncement(repoAddr(0), []string{"wss://a.example", "wss://b.example"}, true)
	x.SetAnnouncement(repoAddr(1), []string{"wss://b.example"}, true)
	x.SetAnnouncement(repoAddr(0), []string{"wss://b.example", "wss://c.example"}, true) // a dropped
	if _, ok := x.relayByURL["wss://a.example"]; ok || len(x.relayByURL) != 2 {
		t.Fatalf("interned relays %v", keys(x.relayByURL))
	}
	x.Remove(repoAddr(0))
	if got := keys(x.relayByURL); !slices.Equal(got, []string{"wss://b.example"}) {
		t.Fatalf("interned relays %v, want b only", got)
	}
	id, _ := x.Lookup(repoAddr(1))
	if got := x.Relays(id); !slices.Equal(got, []string{"wss://b.example"}) {
		t.Fatalf("repo 1 relays %v", got)
	}
}

// BenchmarkForgetChurn adds and forgets rounds of 1,000 repositories (50
// root events and one relay of their own each) while 1,000 others stay. It
// reports the index's retained heap after 10 rounds as a ratio of that after
// the first round: 1.0 means forgotten repositories leave nothing behind
// (memory is bounded by the peak of repositories synced at once), while
// without Forget each round would add a full round's worth. peak/steady is
// that bound: retained heap after churn over the 1,000 stable repositories
// alone.
func BenchmarkForgetChurn(b *testing.B) {
	for i := 0; i < b.N; i++ {
		base := heapInUse()
		x := buildIndex(b, 1000, 50, 100, 5)
		steady := heapInUse() - base
		id := 1 << 30
		var first uint64
		for round := 0; round < 10; round++ {
			for r := 0; r < 1000; r++ {
				a := repoAddr(100000 + round*1000 + r)
				x.SetAnnouncement(a, []string{selfURL, relayURL(1000 + round*1000 + r)}, true)
				for e := 0; e < 50; e++ {
					id++
					if _, err := x.AddRootEvent(a, hexID(id)); err != nil {
						b.Fatal(err)
					}
				}
			}
			for r := 0; r < 1000; r++ {
				x.Remove(repoAddr(100000 + round*1000 + r))
			}
			if round == 0 {
				first = heapInUse() - base
			}
		}
		after := heapInUse() - base
		if x.Len() != 1000 || x.RootEventCount() != 50000 {
			b.Fatalf("len %d events %d", x.Len(), x.RootEventCount())
		}
		b.ReportMetric(float64(after)/float64(first), "round10/round1")
		b.ReportMetric(float64(after)/float64(steady), "peak/steady")
		b.ReportMetric(float64(steady)/(1<<20), "steady-MB")
	}
}
