package hunt

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/prometheus/client_golang/prometheus"
)

// TestG02_8_NextURLSelection drives pick directly: the owner's decision of
// which URL a round tries next.
func TestG02_8_NextURLSelection(t *testing.T) {
	lim := throttle.Limits{Concurrency: 1, PerMinute: 10}
	opts := DefaultOptions()
	opts.SelfHosts = []string{"grasp.example"}
	opts.Limits = func(context.Context, string) throttle.Limits { return lim }
	clk := clock.NewFake(t0)
	h, err := New(withSync(opts, newFakeSC(clk)), env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	const (
		self    = "https://grasp.example/npub1x/r.git"
		selfAlt = "https://grasp.example:8443/npub1x/r.git"
		busyA1  = "https://busy.example/a1.git"
		busyA2  = "https://busy.example/a2.git"
		dead    = "https://dead.example/r.git"
		free    = "https://free.example/r.git"
		free2   = "https://free.example/r2.git"
	)
	h.domain("busy.example").take(t0) // at its concurrency limit
	h.naughty["dead.example:443"] = t0.Add(time.Hour)
	e := &entry{repo: repoN("r"), needs: map[string]map[string]struct{}{oid("x"): {"": {}}},
		sources: []string{self, busyA1, dead, busyA2, "file:///etc", free, selfAlt, free2}, tried: map[string]bool{}}

	g, throttled := h.pick(e, "")
	if !g.ok || g.url != free || throttled != nil {
		t.Fatalf("first pick %+v %v, want %s (own URL, file:, throttled and naughty skipped)", g, throttled, free)
	}
	if !e.tried[self] || !e.tried["file:///etc"] || e.tried[busyA1] || e.tried[dead] {
		t.Fatalf("tried %v: own and unusable URLs are done for, throttled and naughty are not", e.tried)
	}
	// free.example is now at its limit too; our own host on another port is
	// a different service and may be tried.
	g, _ = h.pick(e, "")
	if !g.ok || g.url != selfAlt {
		t.Fatalf("second pick %+v, want %s", g, selfAlt)
	}
	g, throttled = h.pick(e, "")
	if g.ok || !reflect.DeepEqual(throttled, []string{"busy.example", "free.example"}) {
		t.Fatalf("third pick %+v %v, want none and both busy domains", g, throttled)
	}
	// Slots free: the tried URL is skipped, the next on the domain comes.
	h.domain("free.example").inFlight = 0
	h.domain("free.example").starts = nil
	if g, _ = h.pick(e, "free.example"); !g.ok || g.url != free2 {
		t.Fatalf("pick on free.example %+v, want %s", g, free2)
	}
	h.domain("busy.example").inFlight = 0
	if g, _ = h.pick(e, ""); !g.ok || g.url != busyA1 {
		t.Fatalf("pick %+v, want %s", g, busyA1)
	}
	h.domain("busy.example").inFlight = 0
	if g, _ = h.pick(e, ""); !g.ok || g.url != busyA2 {
		t.Fatalf("pick %+v, want %s", g, busyA2)
	}
	h.domain("busy.example").inFlight = 0
	if g, throttled = h.pick(e, ""); g.ok || throttled != nil {
		t.Fatalf("pick %+v %v, want nothing left but the naughty host", g, throttled)
	}
	// The naughty entry expires.
	clk.Advance(time.Hour)
	if g, _ = h.pick(e, ""); !g.ok || g.url != dead {
		t.Fatalf("pick after naughty expiry %+v", g)
	}
}

func TestDomainThrottleSlidingWindow(t *testing.T) {
	lim := throttle.Limits{Concurrency: 2, PerMinute: 3}
	d := newDomainState(otherDomains)
	d.enqueue("w")
	for i := 0; i < 2; i++ {
		if !d.hasCapacity(t0, lim) {
			t.Fatalf("no capacity for fetch %d", i+1)
		}
		d.take(t0.Add(time.Duration(i) * 10 * time.Second))
	}
	if d.hasCapacity(t0.Add(20*time.Second), lim) {
		t.Fatal("capacity beyond the concurrency limit")
	}
	if _, ok := d.opening(t0.Add(20*time.Second), lim); ok {
		t.Fatal("a concurrency-bound domain wants a timer; a finishing fetch is its trigger")
	}
	d.inFlight = 0
	d.take(t0.Add(20 * time.Second))
	d.inFlight = 0
	now := t0.Add(30 * time.Second)
	if d.hasCapacity(now, lim) {
		t.Fatal("fourth fetch inside the minute allowed")
	}
	if at, ok := d.opening(now, lim); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Fatalf("opening %v %v, want when the first start leaves the window", at, ok)
	}
	if !d.hasCapacity(t0.Add(time.Minute), lim) {
		t.Fatal("no capacity once the first start left the window")
	}
	if k, _ := d.pop(); k != "w" || d.enqueue("w") == false || d.enqueue("w") {
		t.Fatal("queue: pop, re-enqueue and dedup")
	}
}

func TestG02_8_ConcurrencyLimitPerDomain(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{Concurrency: 2, PerMinute: 100})
	hs.sc.took = 10 * time.Second
	for i := 0; i < 6; i++ {
		url := fmt.Sprintf("https://a.example/r%d.git", i)
		hs.sc.remote(url, KindOther, oid("x"))
		hs.h.Need(Need{Repo: repoN(fmt.Sprint(i)), OIDs: []string{oid("x")}, Sources: []string{url}, FromSync: true})
	}
	hs.advance(time.Second, 500*time.Millisecond)
	if st := hs.h.Stats(); st.InFlight["a.example"] != 2 || st.Waiting != 4 {
		t.Fatalf("stats %+v, want 2 in flight and 4 waiting", st)
	}
	// No polling: only the two fetches' timers are armed while four wait.
	if p := hs.clk.Pending(); p != 2 {
		t.Fatalf("%d timers armed, want only the 2 fetches'", p)
	}
	hs.advance(time.Minute, 500*time.Millisecond)
	ms := time.Millisecond
	want := []time.Duration{500 * ms, 500 * ms, 10500 * ms, 10500 * ms, 20500 * ms, 20500 * ms}
	if got := callTimes(hs.sc.getCalls()); !reflect.DeepEqual(got, want) {
		t.Fatalf("fetch starts %v, want %v", got, want)
	}
	if hs.sc.maxIn["a.example"] != 2 || hs.h.Stats().Repos != 0 {
		t.Fatalf("max in flight %d, stats %+v", hs.sc.maxIn["a.example"], hs.h.Stats())
	}
}

func TestG02_8_RateLimitPerSlidingMinute(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{Concurrency: 10, PerMinute: 3})
	for i := 0; i < 5; i++ {
		url := fmt.Sprintf("https://a.example/r%d.git", i)
		hs.sc.remote(url, KindOther, oid("x"))
		hs.h.Need(Need{Repo: repoN(fmt.Sprint(i)), OIDs: []string{oid("x")}, Sources: []string{url}, FromSync: true})
	}
	hs.advance(time.Second, 500*time.Millisecond)
	if p := hs.clk.Pending(); p != 1 {
		t.Fatalf("%d timers armed, want one for the rate window", p)
	}
	hs.advance(2*time.Minute, 500*time.Millisecond)
	ms := time.Millisecond
	want := []time.Duration{500 * ms, 500 * ms, 500 * ms, 60500 * ms, 60500 * ms}
	if got := callTimes(hs.sc.getCalls()); !reflect.DeepEqual(got, want) {
		t.Fatalf("fetch starts %v, want %v", got, want)
	}
}

func TestG02_8_RoundRobinAcrossReposOnADomain(t *testing.T) {
	opts := DefaultOptions()
	opts.Config.FetchBackoffBase, opts.Config.FetchBackoffMax = config.Duration(5*time.Minute), config.Duration(5*time.Minute) // one round each in this window
	hs := newHarness(t, opts, throttle.Limits{Concurrency: 1, PerMinute: 100})
	hs.sc.took = 10 * time.Second
	hs.h.Need(Need{Repo: repoN("A"), OIDs: []string{oid("x")}, FromSync: true, Sources: []string{
		"https://x.example/a1.git", "https://x.example/a2.git", "https://x.example/a3.git"}})
	hs.h.Need(Need{Repo: repoN("B"), OIDs: []string{oid("x")}, FromSync: true, Sources: []string{"https://x.example/b.git"}})
	hs.h.Need(Need{Repo: repoN("C"), OIDs: []string{oid("x")}, FromSync: true, Sources: []string{"https://x.example/c.git"}})
	hs.advance(60*time.Second, 500*time.Millisecond)
	calls := hs.sc.getCalls()
	var repos []string
	for _, c := range calls {
		repos = append(repos, c.repo)
	}
	if len(repos) != 5 {
		t.Fatalf("fetches %v, want 5", repos)
	}
	first := map[string]bool{}
	for _, r := range repos[:3] {
		first[r] = true
	}
	if len(first) != 3 || repos[3] != "A" || repos[4] != "A" {
		t.Fatalf("order %v: every repo gets a turn before A's second URL", repos)
	}
}

func TestG02_8_NaughtyHostsSkippedUntilExpiry(t *testing.T) {
	opts := DefaultOptions()
	opts.Config.NaughtyTTL = config.Duration(10 * time.Minute)
	hs := newHarness(t, opts, throttle.Limits{})
	dead := "https://dead.example/r.git"
	other := "https://dead.example:8443/r.git" // same machine, another service
	broken := "https://broken.example/r.git"
	hs.sc.remote(dead, KindNetwork)
	hs.sc.remote(other, KindOther)
	hs.sc.remote(broken, KindProtocol)
	hs.h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x")}, Sources: []string{dead, other, broken}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond)
	if st := hs.h.Stats(); !reflect.DeepEqual(st.Naughty, []string{"dead.example:443"}) {
		t.Fatalf("naughty %v, want only the host that failed to connect (protocol errors are not naughty)", st.Naughty)
	}
	hs.advance(9*time.Minute, 10*time.Second)
	count := map[string]int{}
	for _, c := range hs.sc.getCalls() {
		count[c.url]++
	}
	if count[dead] != 1 || count[other] < 3 || count[broken] < 3 {
		t.Fatalf("fetches per URL %v: the dead host must cost nothing after its first failure", count)
	}
	hs.advance(2*time.Minute, 10*time.Second)
	n := 0
	for _, c := range hs.sc.getCalls() {
		if c.url == dead {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("dead host fetched %d times, want it retried once after the naughty TTL", n)
	}
}

func TestG02_IdleHunterArmsNoTimer(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	url := "https://a.example/r.git"
	hs.sc.remote(url, KindOther, oid("x"))
	hs.settle()
	if p := hs.clk.Pending(); p != 0 {
		t.Fatalf("%d timers armed by an empty hunter", p)
	}
	hs.h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x")}, Sources: []string{url}, FromSync: true})
	hs.h.Need(Need{Repo: repoN("q"), OIDs: []string{oid("y")}, Sources: []string{url}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond)
	if p := hs.clk.Pending(); p != 1 {
		t.Fatalf("%d timers armed with one repo in backoff, want 1", p)
	}
	hs.h.Forget(repoN("q"))
	hs.settle()
	if p := hs.clk.Pending(); p != 0 {
		t.Fatalf("%d timers armed after the queue emptied", p)
	}
}

func TestMetricsReportQueueAttemptsAndDomains(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := clock.NewFake(t0)
	sc := newFakeSC(clk)
	opts := DefaultOptions()
	opts.Labelled = func(d string) bool { return d == "one.example" } // a tuning file names it
	h, err := New(withSync(opts, sc), env.Env{Clock: clk, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	sc.h = h
	if _, err := New(withSync(opts, sc), env.Env{Clock: clk, Metrics: reg}); err == nil {
		t.Fatal("second registration on one registry accepted")
	}
	hs := &harness{t: t, clk: clk, sc: sc, h: h}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() { close(sc.stop); cancel(); <-done }()
	u1, u2 := "https://one.example/r.git", "https://two.example/r.git"
	sc.remote(u1, KindOther, oid("x"))
	sc.remote(u2, KindNetwork)
	h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x"), oid("y")}, Sources: []string{u1, u2}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond)
	for _, tc := range []struct {
		name  string
		label string
		want  float64
	}{
		{"grasp_hunt_fetch_attempts_total", "network", 1},
		{"grasp_hunt_fetch_attempts_total", "partial", 1},
		{"grasp_hunt_naughty_hosts", "", 1},
		{"grasp_hunt_oids_fetched_total", "", 1},
		{"grasp_hunt_queue_repos", "", 1},
		{"grasp_hunt_domain_requests_total", "one.example", 1},
		{"grasp_hunt_domain_requests_total", "other", 1}, // two.example, named by nobody
		{"grasp_hunt_domain_requests_total", "two.example", -1},
		{"grasp_hunt_domain_in_flight", "one.example", 0},
		{"grasp_hunt_domain_in_flight", "other", 0},
		{"grasp_hunt_rounds_total", "backoff", 1},
	} {
		if got := metricValue(t, reg, tc.name, tc.label); got != tc.want {
			t.Errorf("%s{%s} = %v, want %v", tc.name, tc.label, got, tc.want)
		}
	}
}

// Audit F14 (hunter side): domains come from clone URLs whoever announces
// a repository chooses, so labelling the per-domain series with them let one
// announcement create a series per domain it lists. Only domains a tuning
// file names get their own series; the rest are summed under "other".
func TestAbuse_F14_HuntDomainSeriesOnlyForOperatorDomains(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := clock.NewFake(t0)
	sc := newFakeSC(clk)
	opts := DefaultOptions()
	opts.Labelled = func(d string) bool { return d == "forge.example" }
	h, err := New(withSync(opts, sc), env.Env{Clock: clk, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	sc.h = h
	hs := &harness{t: t, clk: clk, sc: sc, h: h}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() { close(sc.stop); cancel(); <-done }()
	const n = 200
	sources := []string{"https://forge.example/r.git"}
	sc.remote(sources[0], KindOther)
	for i := range n {
		u := fmt.Sprintf("https://attacker-%d.example/r.git", i)
		sc.remote(u, KindOther)
		sources = append(sources, u)
	}
	h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("x")}, Sources: sources, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond)
	if got := metricValue(t, reg, "grasp_hunt_domain_requests_total", "other"); got != n {
		t.Fatalf("grasp_hunt_domain_requests_total{domain=other} = %v, want %d", got, n)
	}
	if got := metricValue(t, reg, "grasp_hunt_domain_requests_total", "forge.example"); got != 1 {
		t.Fatalf("grasp_hunt_domain_requests_total{domain=forge.example} = %v, want 1", got)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "attacker") {
					t.Fatalf("%s is labelled with the announced domain %q", f.GetName(), l.GetValue())
				}
			}
		}
	}
}

// metricValue reads one series; label is the value of its only label.
func metricValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			}
		}
	}
	return -1
}
