package hunt

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/grasp-dev/grasp/internal/testwait"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// oid makes a valid object id from a short name.
func oid(name string) string {
	s := fmt.Sprintf("%x", name)
	return (s + strings.Repeat("0", 40))[:40]
}

// call is one Fetch the double saw.
type call struct {
	at   time.Time
	repo string
	url  string
	oids []string
}

// remote is how the double's git host at one URL behaves.
type remote struct {
	has map[string]bool // objects the remote holds
	err Kind            // fail every fetch with this kind (KindOther = no failure)
}

// fakeSC is the test double of SyncContext: remotes by URL, objects present
// per repo, a fixed fake-clock duration per fetch.
type fakeSC struct {
	clk  *clock.Fake
	h    *Hunter
	took time.Duration
	stop chan struct{}

	mu       sync.Mutex
	remotes  map[string]*remote
	present  map[string]map[string]bool // repo key -> oid
	calls    []call
	arrived  map[string]int
	inFlight map[string]int // by domain
	maxIn    map[string]int
	drifted  []Need
}

func newFakeSC(clk *clock.Fake) *fakeSC {
	return &fakeSC{clk: clk, stop: make(chan struct{}), remotes: map[string]*remote{}, present: map[string]map[string]bool{},
		arrived: map[string]int{}, inFlight: map[string]int{}, maxIn: map[string]int{}}
}

func (f *fakeSC) remote(url string, err Kind, oids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &remote{has: map[string]bool{}, err: err}
	for _, o := range oids {
		r.has[o] = true
	}
	f.remotes[url] = r
}

func (f *fakeSC) Fetch(ctx context.Context, repo nip34.RepoRef, url string, oids []string) ([]string, error) {
	t, _ := parseSource(url)
	f.mu.Lock()
	f.calls = append(f.calls, call{at: f.clk.Now(), repo: repo.Identifier, url: url, oids: append([]string(nil), oids...)})
	f.inFlight[t.domain]++
	if f.inFlight[t.domain] > f.maxIn[t.domain] {
		f.maxIn[t.domain] = f.inFlight[t.domain]
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight[t.domain]--
		f.mu.Unlock()
	}()
	if f.took > 0 {
		// Park on the fake clock. The timer is armed before the task stops
		// counting as busy, and the callback counts it busy again inside
		// Advance, so the harness never advances past a running fetch. Like
		// a git process finishing its pack, it ignores cancellation until
		// the fetch time has passed (only the harness's stop ends it early).
		woke := make(chan struct{})
		f.clk.AfterFunc(f.took, func() { f.h.busy.Add(1); close(woke) })
		f.h.done(1)
		select {
		case <-woke:
		case <-f.stop:
			return nil, &FetchError{Kind: KindOther, URL: url, Err: context.Canceled}
		}
		if ctx.Err() != nil {
			return nil, &FetchError{Kind: KindOther, URL: url, Err: ctx.Err()}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.remotes[url]
	if r == nil {
		return nil, &FetchError{Kind: KindProtocol, URL: url, Detail: "repository not found"}
	}
	if r.err != KindOther {
		return nil, &FetchError{Kind: r.err, URL: url, Detail: "scripted " + r.err.String()}
	}
	key := repoKey(repo)
	if f.present[key] == nil {
		f.present[key] = map[string]bool{}
	}
	var got, missing []string
	for _, o := range oids {
		if r.has[o] {
			f.present[key][o] = true
			got = append(got, o)
		} else {
			missing = append(missing, o)
		}
	}
	if len(missing) > 0 {
		return got, &FetchError{Kind: KindMissing, URL: url, Missing: missing}
	}
	return got, nil
}

func (f *fakeSC) Has(_ context.Context, repo nip34.RepoRef, oids []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, o := range oids {
		if f.present[repoKey(repo)][o] {
			out = append(out, o)
		}
	}
	return out, nil
}

func (f *fakeSC) Arrived(_ context.Context, repo nip34.RepoRef) {
	f.mu.Lock()
	f.arrived[repo.Identifier]++
	f.mu.Unlock()
}

func (f *fakeSC) Drifted(context.Context) ([]Need, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drifted, nil
}

func (f *fakeSC) put(repo nip34.RepoRef, oids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.present[repoKey(repo)] == nil {
		f.present[repoKey(repo)] = map[string]bool{}
	}
	for _, o := range oids {
		f.present[repoKey(repo)][o] = true
	}
}

func (f *fakeSC) getCalls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func (f *fakeSC) arrivals(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.arrived[id]
}

// harness runs a Hunter on a fake clock with the double.
type harness struct {
	t   testing.TB
	clk *clock.Fake
	sc  *fakeSC
	h   *Hunter
}

func newHarness(t testing.TB, opts Options, lim throttle.Limits) *harness {
	t.Helper()
	clk := clock.NewFake(t0)
	sc := newFakeSC(clk)
	if lim != (throttle.Limits{}) {
		opts.Limits = func(context.Context, string) throttle.Limits { return lim }
	}
	h, err := New(withSync(opts, sc), env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	sc.h = h
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		close(sc.stop)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &harness{t: t, clk: clk, sc: sc, h: h}
}

// settle waits until the hunter cannot progress without time passing.
func (hs *harness) settle() {
	hs.t.Helper()
	if !hs.h.waitSettled(testwait.Limit(hs.t)) {
		hs.t.Fatalf("hunter did not settle (busy=%d)", hs.h.busy.Load())
	}
}

// advance moves the fake clock in steps, settling after each, so every
// timer fires with the hunter caught up to its deadline.
func (hs *harness) advance(d, step time.Duration) {
	hs.t.Helper()
	hs.settle()
	for d > 0 {
		s := step
		if s > d {
			s = d
		}
		hs.clk.Advance(s)
		hs.settle()
		d -= s
	}
}

// waitSettled waits until the hunter can make no progress without time
// passing or a caller acting, or until timeout of real time.
func (h *Hunter) waitSettled(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for h.busy.Load() != 0 {
		select {
		case <-h.settled:
		case <-deadline.C:
			return h.busy.Load() == 0
		}
	}
	return true
}

func repoN(id string) nip34.RepoRef {
	return nip34.RepoRef{Pubkey: strings.Repeat("ab", 32), Identifier: id}
}

func callURLs(cs []call) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.url
	}
	return out
}

// withSync returns opts with its SyncContext set.
func withSync(opts Options, sc SyncContext) Options {
	opts.Sync = sc
	return opts
}
