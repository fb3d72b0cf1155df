package relaysync

import (
	"context"
	"github.com/grasp-dev/grasp/core/config"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type call struct {
	op, url, sub string
	filters      []nostr.Filter
	mode         CatchUp
}

// fakeConns records what the manager asks of the connection layer.
type fakeConns struct {
	mu    sync.Mutex
	calls []call
}

func (f *fakeConns) add(c call)         { f.mu.Lock(); f.calls = append(f.calls, c); f.mu.Unlock() }
func (f *fakeConns) Connect(url string) { f.add(call{op: "connect", url: url}) }
func (f *fakeConns) Subscribe(url, sub string, fs []nostr.Filter, m CatchUp) {
	f.add(call{op: "sub", url: url, sub: sub, filters: fs, mode: m})
}
func (f *fakeConns) Unsubscribe(url, sub string) { f.add(call{op: "unsub", url: url, sub: sub}) }
func (f *fakeConns) Close(url string)            { f.add(call{op: "close", url: url}) }

// take returns and forgets the calls recorded so far.
func (f *fakeConns) take() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// fakeHealth allows everything except during a cooldown it was told about.
type fakeHealth struct {
	mu                  sync.Mutex
	cooldown            map[string]time.Time
	failed, ok, limited int
}

func (h *fakeHealth) NextAttempt(url string, now time.Time) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cooldown[url]
}
func (h *fakeHealth) Succeeded(string, time.Time, time.Duration) { h.mu.Lock(); h.ok++; h.mu.Unlock() }
func (h *fakeHealth) Failed(string, time.Time)                   { h.mu.Lock(); h.failed++; h.mu.Unlock() }
func (h *fakeHealth) RateLimited(url string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.limited++
	if h.cooldown == nil {
		h.cooldown = map[string]time.Time{}
	}
	h.cooldown[url] = now.Add(65 * time.Second)
}
func (h *fakeHealth) Health(string) Health { return Health{OK: true} }

type harness struct {
	t     *testing.T
	m     *Manager
	clk   *clock.Fake
	conns *fakeConns
	hl    *fakeHealth
	reg   *prometheus.Registry
}

func newHarness(t *testing.T, tweak func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewFake(t0), conns: &fakeConns{}, hl: &fakeHealth{}, reg: prometheus.NewRegistry()}
	o := Options{
		Conns: h.conns, Health: h.hl, Self: []string{"wss://self.example"},
		Rand:   func() float64 { return 0.5 },
		Config: config.Sync{DisconnectCheckInterval: config.Duration(1000 * time.Hour)}, // driven explicitly by tests that need it
	}
	if tweak != nil {
		tweak(&o)
	}
	m, err := NewManager(o, env.Env{Clock: h.clk, Metrics: h.reg})
	if err != nil {
		t.Fatal(err)
	}
	h.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

// snap waits until the actor has handled everything sent so far.
func (h *harness) snap() Snapshot {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(h.t))
	defer cancel()
	s, err := h.m.Snapshot(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) relay(url string) RelaySnapshot {
	h.t.Helper()
	for _, r := range h.snap().Relays {
		if r.URL == url {
			return r
		}
	}
	h.t.Fatalf("relay %s not tracked", url)
	return RelaySnapshot{}
}

// observe feeds events and lets the batch window pass.
func (h *harness) observe(evts ...*nostr.Event) {
	for _, e := range evts {
		h.m.Observe(e)
	}
	h.clk.Advance(h.m.o.Config.BatchWindow.D())
	h.snap()
}

// finish reports every subscription in calls as done (EOSE).
func (h *harness) finish(calls []call) {
	for _, c := range calls {
		if c.op == "sub" {
			h.m.SubscriptionDone(c.url, c.sub)
		}
	}
	h.snap()
}

func ops(calls []call, op string) []call {
	var out []call
	for _, c := range calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

// split separates layer 1 subscriptions from item subscriptions.
func split(calls []call) (l1, items []call) {
	for _, c := range ops(calls, "sub") {
		if len(c.filters) != 1 {
			panic("one filter per subscription expected")
		}
		if len(c.filters[0].Kinds) > 0 {
			l1 = append(l1, c)
		} else {
			items = append(items, c)
		}
	}
	return l1, items
}

const r1 = "wss://r1.example"

// initialSync announces repo 0 on r1 with n root events, connects r1 and
// confirms everything, returning the item subscriptions.
func (h *harness) initialSync(n int) []call {
	h.t.Helper()
	evts := []*nostr.Event{announcement(0, "wss://self.example", r1)}
	for i := 1; i <= n; i++ {
		evts = append(evts, rootEvent(1621, i, 0))
	}
	h.observe(evts...)
	if c := h.conns.take(); len(c) != 1 || c[0].op != "connect" || c[0].url != r1 {
		h.t.Fatalf("after discovery: %+v, want connect %s only", c, r1)
	}
	h.m.Connected(r1)
	h.snap()
	calls := h.conns.take()
	h.finish(calls)
	return calls
}

func TestG02_Scenario1_InitialConnect(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.Negentropy = true })
	h.observe(announcement(0, "wss://self.example", r1), rootEvent(1617, 1, 0), rootEvent(1618, 2, 0), rootEvent(1621, 3, 0))
	if c := h.conns.take(); len(c) != 1 || c[0].op != "connect" || c[0].url != r1 {
		t.Fatalf("discovery calls %+v, want one connect to r1 (never to self)", c)
	}
	if r := h.relay(r1); r.Status != Connecting {
		t.Fatalf("r1 status %s", r.Status)
	}
	h.m.Connected(r1)
	h.snap()
	calls := h.conns.take()
	l1, items := split(calls)
	if len(l1) != 1 || l1[0].filters[0].Since != nil || l1[0].mode != CatchUpNegentropy {
		t.Fatalf("layer 1 %+v, want one full-history negentropy subscription", l1)
	}
	if got := letters(t, filtersOf(items)); got != "aAqeEq" {
		t.Fatalf("item letters %q", got)
	}
	for _, c := range items {
		if c.filters[0].Since != nil || c.mode != CatchUpNegentropy {
			t.Fatalf("initial item subscription with since or REQ: %+v", c)
		}
	}
	if r := h.relay(r1); r.PendingBatches != 1 || r.ConfirmedRepos != 0 || r.Filters != 7 {
		t.Fatalf("before EOSE: %+v", r)
	}
	// All but one EOSE: not yet confirmed.
	for _, c := range items[:len(items)-1] {
		h.m.SubscriptionDone(r1, c.sub)
	}
	if r := h.relay(r1); r.ConfirmedRepos != 0 {
		t.Fatalf("confirmed before every EOSE: %+v", r)
	}
	h.m.SubscriptionDone(r1, items[len(items)-1].sub)
	if r := h.relay(r1); r.PendingBatches != 0 || r.ConfirmedRepos != 1 || r.ConfirmedEvents != 3 {
		t.Fatalf("after EOSE: %+v", r)
	}
	// A new root event on a connected relay is one new batch of just it.
	h.observe(rootEvent(1621, 4, 0))
	_, items = split(h.conns.take())
	if len(items) != 3 {
		t.Fatalf("new root event gave %d subscriptions, want 3", len(items))
	}
	if _, v := tagValues(t, items[0].filters[0]); len(v) != 1 || v[0] != hexID(4) {
		t.Fatalf("new item filter values %v", v)
	}
}

func filtersOf(calls []call) []nostr.Filter {
	var fs []nostr.Filter
	for _, c := range calls {
		fs = append(fs, c.filters...)
	}
	return fs
}

func TestG02_Scenario2_QuickReconnect(t *testing.T) {
	h := newHarness(t, nil)
	h.initialSync(3)
	h.clk.Advance(time.Hour)
	lost := h.clk.Now()
	h.m.Disconnected(r1, nil)
	if r := h.relay(r1); r.Status != Connecting || r.PendingBatches != 0 || r.ConfirmedEvents != 3 {
		t.Fatalf("after loss: %+v", r)
	}
	h.take1("connect")
	h.observe(rootEvent(1617, 9, 0)) // arrives while disconnected: not subscribed yet
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("subscribed on a disconnected relay: %+v", c)
	}
	h.clk.Advance(10 * time.Minute)
	h.m.Connected(r1)
	h.snap()
	l1, items := split(h.conns.take())
	since := nostr.Timestamp(lost.Add(-15 * time.Minute).Unix())
	if len(l1) != 1 || l1[0].filters[0].Since == nil || *l1[0].filters[0].Since != since || l1[0].mode != CatchUpReq {
		t.Fatalf("layer 1 on quick reconnect %+v, want since %d", l1, since)
	}
	var catchUp, fresh []call
	for _, c := range items {
		if c.filters[0].Since != nil {
			if *c.filters[0].Since != since {
				t.Fatalf("catch-up since %d, want %d", *c.filters[0].Since, since)
			}
			catchUp = append(catchUp, c)
		} else {
			fresh = append(fresh, c)
		}
	}
	if got := letters(t, filtersOf(catchUp)); got != "aAqeEq" {
		t.Fatalf("catch-up letters %q", got)
	}
	if len(fresh) != 3 {
		t.Fatalf("new item subscriptions %d, want 3 (#e #E #q of the new root)", len(fresh))
	}
	if r := h.relay(r1); r.ConfirmedEvents != 3 || r.PendingBatches != 1 {
		t.Fatalf("confirmed state not kept: %+v", r)
	}
}

func (h *harness) take1(op string) {
	h.t.Helper()
	c := h.conns.take()
	if len(c) != 1 || c[0].op != op {
		h.t.Fatalf("calls %+v, want one %s", c, op)
	}
}

// staleReconnect loses r1, reconnects it past the quick-reconnect window
// and returns what the manager subscribed.
func (h *harness) staleReconnect() (l1, items []call) {
	h.t.Helper()
	h.m.Disconnected(r1, nil)
	h.snap()
	h.take1("connect")
	h.clk.Advance(16 * time.Minute)
	h.m.Connected(r1)
	h.snap()
	return split(h.conns.take())
}

func TestG02_Scenario3_StaleReconnect(t *testing.T) {
	h := newHarness(t, nil)
	h.initialSync(3)
	l1, items := h.staleReconnect()
	if len(l1) != 1 || l1[0].filters[0].Since != nil {
		t.Fatalf("layer 1 after stale reconnect %+v, want full history", l1)
	}
	if len(items) != 6 {
		t.Fatalf("%d item subscriptions, want everything again (6)", len(items))
	}
	for _, c := range items {
		if c.filters[0].Since != nil {
			t.Fatalf("stale reconnect used since: %+v", c)
		}
	}
	if r := h.relay(r1); r.ConfirmedRepos != 0 || r.PendingBatches != 1 {
		t.Fatalf("state not cleared: %+v", r)
	}
	h.finish(items)
	if r := h.relay(r1); r.ConfirmedEvents != 3 {
		t.Fatalf("not repopulated: %+v", r)
	}
}

func TestG02_Scenario4_Consolidation(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.ConsolidateAbove = 25; o.Config.TagsPerFilter = 2 })
	first := h.initialSync(5) // 1 + 3 + 9 filters
	if r := h.relay(r1); r.Filters != 13 || r.ConfirmedEvents != 5 {
		t.Fatalf("after initial sync %+v", r)
	}
	var evts []*nostr.Event
	for i := 6; i <= 11; i++ {
		evts = append(evts, rootEvent(1621, i, 0))
	}
	h.observe(evts...) // 9 more filters: 22, pending
	second := h.conns.take()
	if r := h.relay(r1); r.Filters != 22 || r.PendingBatches != 1 {
		t.Fatalf("second batch %+v", r)
	}
	h.observe(rootEvent(1621, 12, 0), rootEvent(1621, 13, 0), rootEvent(1621, 14, 0), rootEvent(1621, 15, 0))
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("consolidated while a batch was pending: %+v", c)
	}
	h.finish(second) // pending done → deferred AddFilters → consolidation
	calls := h.conns.take()
	unsubs := ops(calls, "unsub")
	if len(unsubs) != 21 {
		t.Fatalf("%d unsubscribes, want the 21 item subscriptions", len(unsubs))
	}
	for _, u := range unsubs {
		if u.sub == ops(first, "sub")[0].sub {
			t.Fatal("layer 1 closed by consolidation")
		}
	}
	l1, items := split(calls)
	if len(l1) != 0 {
		t.Fatalf("layer 1 resubscribed: %+v", l1)
	}
	since := nostr.Timestamp(h.clk.Now().Add(-15 * time.Minute).Unix())
	var catchUp, fresh int
	for _, c := range items {
		if s := c.filters[0].Since; s != nil {
			if *s != since {
				t.Fatalf("catch-up since %d want %d", *s, since)
			}
			catchUp++
		} else {
			fresh++
		}
	}
	// Budget (25-1)/2 = 12 filters: 6 values per filter → confirmed 1 addr +
	// 11 ids = 9 filters with since, the 4 new ids = 3 without.
	if catchUp != 9 || fresh != 3 {
		t.Fatalf("catch-up %d fresh %d, want 9 and 3", catchUp, fresh)
	}
	r := h.relay(r1)
	if r.Filters != 13 || r.Filters > 25 || r.ConfirmedEvents != 11 || r.PendingBatches != 1 {
		t.Fatalf("after consolidation %+v", r)
	}
}

func TestG02_Scenario5_DailyFreshSync(t *testing.T) {
	h := newHarness(t, nil)
	first := h.initialSync(3)
	h.clk.Advance(24*time.Hour - time.Minute)
	if c := h.conns.take(); len(c) != 0 || h.relay(r1).ConfirmedEvents != 3 {
		t.Fatalf("daily sync before 24h (rand 0.5 of 23..25h): %+v", c)
	}
	h.clk.Advance(time.Minute)
	h.snap()
	calls := h.conns.take()
	if got := len(ops(calls, "unsub")); got != len(ops(first, "sub")) {
		t.Fatalf("%d unsubscribes, want all %d", got, len(ops(first, "sub")))
	}
	l1, items := split(calls)
	if len(l1) != 1 || l1[0].filters[0].Since != nil || len(items) != 6 {
		t.Fatalf("daily resubscription l1=%+v items=%d", l1, len(items))
	}
	for _, c := range items {
		if c.filters[0].Since != nil {
			t.Fatal("daily sync used since")
		}
	}
	if r := h.relay(r1); r.ConfirmedRepos != 0 || r.PendingBatches != 1 || r.Filters != 7 {
		t.Fatalf("daily sync did not clear state: %+v", r)
	}
	h.finish(items)
	h.clk.Advance(24 * time.Hour) // rearmed
	h.snap()
	if got := len(ops(h.conns.take(), "unsub")); got != 7 {
		t.Fatalf("second daily sync closed %d subscriptions, want 7", got)
	}
}

func TestG02_SelfSubscriberBatchWindowDoesNotReset(t *testing.T) {
	h := newHarness(t, nil)
	h.m.Observe(announcement(0, "wss://self.example", r1))
	h.clk.Advance(4 * time.Second)
	h.m.Observe(rootEvent(1617, 1, 0))
	h.clk.Advance(999 * time.Millisecond)
	if s := h.snap(); s.Repos != 0 {
		t.Fatalf("batch applied before its window: %+v", s)
	}
	h.clk.Advance(time.Millisecond) // 5 s after the first event
	h.m.Observe(rootEvent(1617, 2, 0))
	if s := h.snap(); s.Repos != 1 || s.RootEvents != 1 {
		t.Fatalf("window extended by later events: %+v", s)
	}
	h.clk.Advance(5 * time.Second)
	if s := h.snap(); s.RootEvents != 2 {
		t.Fatalf("second batch not applied: %+v", s)
	}
	// Other kinds and malformed events are ignored.
	h.m.Observe(&nostr.Event{Kind: 1, PubKey: pubkey(1), ID: hexID(5)})
	h.m.Observe(&nostr.Event{Kind: 1617, PubKey: "bad", ID: hexID(6), Tags: nostr.Tags{{"a", repoAddr(0)}}})
	h.m.Observe(nil)
	if h.clk.Pending() != 1 { // only the disconnect ticker: nothing armed a batch
		t.Fatalf("ignored events armed a batch timer")
	}
}

func TestG02_7_NonListingAnnouncementNotSynced(t *testing.T) {
	h := newHarness(t, nil)
	h.observe(announcement(0, r1))
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("synced a repo that does not list this server: %+v", c)
	}
	// archived (GRASP-05): the server says it is hosted here
	h2 := newHarness(t, func(o *Options) { o.Hosted = func(*nostr.Event) (bool, bool) { return true, true } })
	h2.observe(announcement(0, r1))
	h2.take1("connect")
}

func TestG02_DisconnectCheckClosesIdleRelaysNotBootstrap(t *testing.T) {
	const boot = "wss://boot.example"
	h := newHarness(t, func(o *Options) {
		o.Config.BootstrapRelays = []string{boot}
		o.Config.DisconnectCheckInterval = config.Duration(time.Minute)
	})
	h.snap()
	h.take1("connect") // bootstrap connected at start
	h.m.Connected(boot)
	h.snap()
	l1, items := split(h.conns.take())
	if len(l1) != 1 || len(items) != 0 {
		t.Fatalf("bootstrap relay subscriptions l1=%d items=%d", len(l1), len(items))
	}
	h.initialSync(2)
	// The announcement moves to r2: r1 has nothing left to sync.
	h.observe(announcement(0, "wss://self.example", "wss://r2.example"))
	h.take1("connect")
	h.clk.Advance(time.Minute)
	// The tick and the snapshot request reach the actor on different
	// channels: collect until the check has run.
	var c []call
	for i := 0; i < 200 && len(c) == 0; i++ {
		h.snap()
		c = h.conns.take()
	}
	if len(c) != 1 || c[0].op != "close" || c[0].url != r1 {
		t.Fatalf("disconnect check calls %+v, want close r1", c)
	}
	urls := []string{}
	for _, r := range h.snap().Relays {
		urls = append(urls, r.URL)
	}
	if len(urls) != 2 || urls[0] != boot || urls[1] != "wss://r2.example" {
		t.Fatalf("tracked relays %v", urls)
	}
}

func TestG02_8_RateLimitedCloseCoolsDown(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.DisconnectCheckInterval = config.Duration(30 * time.Second) })
	h.observe(announcement(0, "wss://self.example", r1), rootEvent(1617, 1, 0))
	h.take1("connect")
	h.m.Connected(r1)
	h.snap()
	_, items := split(h.conns.take())
	h.m.SubscriptionClosed(r1, items[0].sub, "rate-limited: slow down")
	h.snap()
	if got := len(ops(h.conns.take(), "unsub")); got != len(items)-1 {
		t.Fatalf("closed batch: %d unsubscribes, want the other %d", got, len(items)-1)
	}
	if r := h.relay(r1); r.PendingBatches != 0 || r.Filters != 1 || h.hl.limited != 1 {
		t.Fatalf("after CLOSED %+v limited=%d", r, h.hl.limited)
	}
	h.clk.Advance(30 * time.Second) // check during the cooldown: nothing
	h.snap()
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("resubscribed during cooldown: %+v", c)
	}
	h.clk.Advance(60 * time.Second) // past 65 s
	// the tick and the snapshot request reach the actor on different
	// channels, so collect until the resubscription has happened
	var again []call
	for i := 0; i < 200 && len(again) < len(items); i++ {
		h.snap()
		_, got := split(h.conns.take())
		again = append(again, got...)
	}
	if len(again) != len(items) {
		t.Fatalf("after cooldown %d subscriptions, want %d", len(again), len(items))
	}
	h.m.Notice(r1, "ERROR: too many concurrent REQs")
	h.snap()
	if h.hl.limited != 2 {
		t.Fatal("rate-limit NOTICE ignored")
	}
}

func TestNewManagerValidates(t *testing.T) {
	for name, o := range map[string]Options{
		"no conns":        {Health: &fakeHealth{}},
		"no health":       {Conns: &fakeConns{}},
		"tiny limit":      {Conns: &fakeConns{}, Health: &fakeHealth{}, Config: config.Sync{ConsolidateAbove: 10}},
		"bad self":        {Conns: &fakeConns{}, Health: &fakeHealth{}, Self: []string{"ftp://x"}},
		"inverted window": {Conns: &fakeConns{}, Health: &fakeHealth{}, Config: config.Sync{DailyMin: config.Duration(2 * time.Hour), DailyMax: config.Duration(time.Hour)}},
	} {
		if _, err := NewManager(o, env.Env{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// recordingSelector keeps every repository a selection was asked for.
type recordingSelector struct {
	mu    sync.Mutex
	repos []RepoInfo
}

func (s *recordingSelector) SelectRelays(_ context.Context, repo RepoInfo, cs []Candidate) ([]string, error) {
	s.mu.Lock()
	s.repos = append(s.repos, repo)
	s.mu.Unlock()
	return AllRelays{}.SelectRelays(context.Background(), repo, cs)
}

// GRASP-05: relay selection is told which repositories are archives (what
// Options.Hosted says), so a plugin can treat them apart.
func TestG05_SelectionSeesArchivedRepos(t *testing.T) {
	sel := &recordingSelector{}
	h := newHarness(t, func(o *Options) {
		o.Selector = sel
		o.Hosted = func(evt *nostr.Event) (bool, bool) { return true, evt.Tags.GetD() == "repo0" }
	})
	h.observe(announcement(0, r1), announcement(1, r1))
	sel.mu.Lock()
	defer sel.mu.Unlock()
	got := map[string]bool{}
	for _, r := range sel.repos {
		got[r.Identifier] = r.Archived
	}
	if len(got) != 2 || !got["repo0"] || got["repo1"] {
		t.Fatalf("archived flags the selection saw: %v", got)
	}
}
