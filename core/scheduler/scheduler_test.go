package scheduler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testlog"
	"github.com/grasp-dev/grasp/internal/testwait"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type harness struct {
	t   *testing.T
	clk *clock.Fake
	reg *prometheus.Registry
	log *testlog.Buffer
	s   *Scheduler
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, clk: clock.NewFake(epoch), reg: prometheus.NewRegistry(), log: &testlog.Buffer{}}
	logger := hclog.New(&hclog.LoggerOptions{Output: h.log, Level: hclog.Trace})
	h.s = New(Options{}, env.Env{Clock: h.clk, Log: logger, Metrics: h.reg})
	t.Cleanup(h.s.Stop)
	return h
}

// armed waits until n timers are armed on the fake clock.
func (h *harness) armed(n int) {
	h.t.Helper()
	if !h.clk.BlockUntil(n, testwait.Limit(h.t)) {
		h.t.Fatalf("%d timers armed, want %d", h.clk.Pending(), n)
	}
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-testwait.After(t):
		t.Fatalf("gave up waiting for %s", what)
		var zero T
		return zero
	}
}

func quiet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("unexpected %s", what)
	default:
	}
}

// metric reads one loop's sample of a scheduler metric.
func (h *harness) metric(name, loop string) float64 {
	h.t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "grasp_scheduler_"+name {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() != loop {
				continue
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return 0
}

func TestRestartDelay(t *testing.T) {
	cases := []struct {
		n    int
		want time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 32 * time.Second},
		{7, time.Minute}, {8, time.Minute}, {1000, time.Minute},
	}
	for _, tc := range cases {
		if got := RestartDelay(tc.n, time.Second, time.Minute); got != tc.want {
			t.Errorf("RestartDelay(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if got := RestartDelay(3, 5*time.Second, 12*time.Second); got != 12*time.Second {
		t.Errorf("cap not applied: %v", got)
	}
}

func TestEveryRunsOncePerIntervalAfterTheRunEnds(t *testing.T) {
	h := newHarness(t)
	ran := make(chan time.Time, 10)
	h.s.Every("sweep", time.Minute, func(ctx context.Context) error {
		ran <- h.clk.Now()
		h.clk.Advance(10 * time.Second) // a run that takes 10s
		return nil
	})
	h.s.Start(context.Background())
	h.armed(1)
	h.clk.Advance(59 * time.Second)
	quiet(t, ran, "run before the first interval")
	h.clk.Advance(time.Second)
	if at := recv(t, ran, "first run"); !at.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("first run at %v", at)
	}
	h.armed(1)
	// The next interval counts from the end of the run (t=70s), so no run at 2m.
	h.clk.Set(epoch.Add(2*time.Minute + 9*time.Second))
	quiet(t, ran, "run before interval elapsed since the previous run ended")
	h.clk.Advance(time.Second)
	if at := recv(t, ran, "second run"); !at.Equal(epoch.Add(130 * time.Second)) {
		t.Fatalf("second run at %v", at)
	}
	h.armed(1)
	if got := h.metric("runs_total", "sweep"); got != 2 {
		t.Fatalf("runs_total = %v", got)
	}
	if got := h.metric("last_duration_seconds", "sweep"); got != 10 {
		t.Fatalf("last_duration_seconds = %v", got)
	}
	if got := h.metric("running", "sweep"); got != 0 {
		t.Fatalf("running = %v between runs", got)
	}
}

func TestEveryRecoversPanicsAndCountsErrors(t *testing.T) {
	h := newHarness(t)
	calls := make(chan int, 10)
	n := 0
	h.s.Every("flaky", time.Second, func(ctx context.Context) error {
		n++
		calls <- n
		switch n {
		case 1:
			panic("boom in flaky")
		case 2:
			return errors.New("disk full")
		}
		return nil
	})
	h.s.Start(context.Background())
	for want := 1; want <= 3; want++ {
		h.armed(1)
		h.clk.Advance(time.Second)
		if got := recv(t, calls, "run"); got != want {
			t.Fatalf("run %d, want %d", got, want)
		}
	}
	h.armed(1)
	if runs, errs, panics := h.metric("runs_total", "flaky"), h.metric("errors_total", "flaky"), h.metric("panics_total", "flaky"); runs != 3 || errs != 2 || panics != 1 {
		t.Fatalf("runs=%v errors=%v panics=%v, want 3 2 1", runs, errs, panics)
	}
	logs := h.log.String()
	if !strings.Contains(logs, "boom in flaky") || !strings.Contains(logs, "scheduler_test.go") {
		t.Fatalf("panic not logged with its stack:\n%s", logs)
	}
	if !strings.Contains(logs, "disk full") {
		t.Fatalf("error not logged:\n%s", logs)
	}
}

func TestGoRestartsAfterPanicWithDoublingBackoff(t *testing.T) {
	h := newHarness(t)
	starts := make(chan int, 10)
	n := 0
	h.s.Go("sync", func(ctx context.Context) error {
		n++
		starts <- n
		if n <= 3 {
			panic("crash")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	h.s.Start(context.Background())
	recv(t, starts, "first start")
	for i, delay := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		h.armed(1)
		h.clk.Advance(delay - time.Millisecond)
		quiet(t, starts, "restart before its backoff")
		h.clk.Advance(time.Millisecond)
		if got := recv(t, starts, "restart"); got != i+2 {
			t.Fatalf("start %d, want %d", got, i+2)
		}
	}
	if got := h.metric("running", "sync"); got != 1 {
		t.Fatalf("running = %v while the loop runs", got)
	}
	if r, p := h.metric("restarts_total", "sync"), h.metric("panics_total", "sync"); r != 3 || p != 3 {
		t.Fatalf("restarts=%v panics=%v", r, p)
	}
	h.s.Stop()
	if got := h.metric("running", "sync"); got != 0 {
		t.Fatalf("running = %v after Stop", got)
	}
	if got := h.metric("errors_total", "sync"); got != 3 {
		t.Fatalf("errors_total = %v: the cancellation at Stop was counted as an error", got)
	}
}

func TestGoErrorRestartsAndLongHealthyRunResetsBackoff(t *testing.T) {
	h := newHarness(t)
	starts := make(chan int, 10)
	release := make(chan struct{})
	n := 0
	h.s.Go("health", func(ctx context.Context) error {
		n++
		starts <- n
		if n == 2 {
			<-release // stays up while the test moves the clock
		}
		if n >= 4 {
			<-ctx.Done()
			return nil
		}
		return errors.New("connection lost")
	})
	h.s.Start(context.Background())
	recv(t, starts, "start 1")
	h.armed(1)
	h.clk.Advance(time.Second)
	recv(t, starts, "start 2")
	h.clk.Advance(RestartBackoffMax) // a healthy run of a full minute
	close(release)
	h.armed(1)
	h.clk.Advance(time.Second) // reset: base delay again, not 2s
	recv(t, starts, "start 3")
	h.armed(1)
	h.clk.Advance(2*time.Second - time.Millisecond)
	quiet(t, starts, "restart before the doubled backoff")
	h.clk.Advance(time.Millisecond)
	recv(t, starts, "start 4")
	if got := h.metric("errors_total", "health"); got != 3 {
		t.Fatalf("errors_total = %v", got)
	}
}

func TestGoCleanReturnIsNotRestarted(t *testing.T) {
	h := newHarness(t)
	calls := 0
	h.s.Go("once", func(ctx context.Context) error {
		calls++
		return nil
	})
	h.s.Start(context.Background())
	recv(t, h.s.loops["once"].done, "loop goroutine to end")
	if calls != 1 || h.clk.Pending() != 0 {
		t.Fatalf("calls=%d pending timers=%d after a clean return", calls, h.clk.Pending())
	}
	if got := h.metric("restarts_total", "once"); got != 0 {
		t.Fatalf("restarts_total = %v", got)
	}
}

func TestStopCancelsAndWaitsForEveryLoop(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var exited []string
	for _, name := range []string{"a", "b"} {
		h.s.Go(name, func(ctx context.Context) error {
			<-ctx.Done()
			mu.Lock()
			exited = append(exited, name)
			mu.Unlock()
			return ctx.Err()
		})
	}
	h.s.Every("tick", time.Hour, func(ctx context.Context) error { return nil })
	h.s.Start(context.Background())
	h.armed(1)
	h.s.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(exited) != 2 {
		t.Fatalf("Stop returned before loops exited: %v", exited)
	}
	for _, l := range h.s.order {
		select {
		case <-l.done:
		default:
			t.Fatalf("loop %s still running after Stop", l.name)
		}
	}
	if h.metric("errors_total", "a") != 0 {
		t.Fatal("shutdown counted as an error")
	}
}

func TestParentContextCancelStopsLoops(t *testing.T) {
	h := newHarness(t)
	h.s.Go("a", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	ctx, cancel := context.WithCancel(context.Background())
	h.s.Start(ctx)
	cancel()
	recv(t, h.s.loops["a"].done, "loop to end on parent cancel")
}

func TestLoopAddedAfterStartRunsAndDuplicatesPanic(t *testing.T) {
	h := newHarness(t)
	h.s.Start(context.Background())
	started := make(chan struct{})
	h.s.Go("late", func(ctx context.Context) error { close(started); <-ctx.Done(); return nil })
	recv(t, started, "late loop to start")
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"late" registered twice`) {
			t.Fatalf("duplicate name: recover() = %v", r)
		}
	}()
	h.s.Every("late", time.Second, func(ctx context.Context) error { return nil })
}

func TestNilLoggerAndRegistryWork(t *testing.T) {
	clk := clock.NewFake(epoch)
	s := New(Options{}, env.Env{Clock: clk})
	ran := make(chan struct{}, 1)
	s.Every("x", time.Second, func(ctx context.Context) error { ran <- struct{}{}; panic("quietly") })
	s.Start(context.Background())
	if !clk.BlockUntil(1, testwait.Limit(t)) {
		t.Fatal("timer never armed")
	}
	clk.Advance(time.Second)
	recv(t, ran, "run")
	s.Stop()
}

func TestTwoSchedulersShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := New(Options{}, env.Env{Clock: clock.NewFake(epoch), Metrics: reg})
	b := New(Options{}, env.Env{Clock: clock.NewFake(epoch), Metrics: reg})
	a.m.runs.WithLabelValues("x").Inc()
	b.m.runs.WithLabelValues("x").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "grasp_scheduler_runs_total" && f.GetMetric()[0].Counter.GetValue() == 2 {
			return
		}
	}
	t.Fatal("the second scheduler did not reuse the registered collectors")
}
