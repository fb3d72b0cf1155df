// Package scheduler owns the process's long-lived loops (sync, health,
// purgatory sweeps, maintenance): it starts them under the process context,
// recovers their panics, restarts crashed loops with a backoff, reports
// per-loop metrics and, on Stop, cancels them and waits until every one has
// returned. It never decides what a loop does; loop bodies belong to their
// packages. All waiting goes through the injected clock.Clock.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
)

// Restart backoff of Go loops that panic or return an error: the delay
// doubles per consecutive failure up to RestartBackoffMax. A run that lasted
// at least RestartBackoffMax counts as healthy and resets the sequence, so a
// loop that crashes once a day restarts after RestartBackoffBase every time.
const (
	RestartBackoffBase = time.Second
	RestartBackoffMax  = time.Minute
)

// RestartDelay is the wait before the n-th consecutive restart (n >= 1).
func RestartDelay(n int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < n; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// Scheduler runs named loops. Register loops with Every and Go, then Start;
// loops registered after Start begin at once. The zero value is not usable:
// call New.
type Scheduler struct {
	clk clock.Clock
	log hclog.Logger
	m   *loopMetrics

	mu      sync.Mutex
	loops   map[string]*loop
	order   []*loop
	ctx     context.Context // set by Start
	cancel  context.CancelFunc
	stopped bool
	wg      sync.WaitGroup
}

type loop struct {
	name     string
	interval time.Duration // > 0 for Every loops, 0 for Go loops
	fn       func(ctx context.Context) error
	done     chan struct{} // closed when the loop's goroutine returns
}

// Options configure a Scheduler. There is nothing to set yet: restarts
// follow RestartBackoffBase..RestartBackoffMax.
type Options struct{}

// New returns a Scheduler that waits on e.Clock, logs to e.Log and reports
// per-loop metrics into e.Metrics.
func New(_ Options, e env.Env) *Scheduler {
	e = e.OrDefaults()
	return &Scheduler{
		clk:   e.Clock,
		log:   e.Log,
		m:     newLoopMetrics(e.Metrics),
		loops: map[string]*loop{},
	}
}

// Every runs fn every interval, the first time one interval after Start.
// Runs never overlap: the next interval is counted from the end of the
// previous run, so a slow run delays the next instead of piling up. Errors
// and panics are logged and counted and the loop carries on. It panics on a
// duplicate name or a non-positive interval, both programming errors.
func (s *Scheduler) Every(name string, interval time.Duration, fn func(ctx context.Context) error) {
	if interval <= 0 {
		panic(fmt.Sprintf("scheduler: loop %q: non-positive interval %v", name, interval))
	}
	s.add(&loop{name: name, interval: interval, fn: fn})
}

// Go runs fn, a long-running loop that should return only when ctx is
// cancelled. If it panics or returns an error, it is restarted after
// RestartDelay; if it returns nil it is done and is not restarted. It panics
// on a duplicate name.
func (s *Scheduler) Go(name string, fn func(ctx context.Context) error) {
	s.add(&loop{name: name, fn: fn})
}

func (s *Scheduler) add(l *loop) {
	l.done = make(chan struct{})
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.loops[l.name]; dup {
		panic(fmt.Sprintf("scheduler: loop %q registered twice", l.name))
	}
	if s.stopped {
		s.log.Error("loop registered after Stop; not started", "loop", l.name)
		close(l.done)
		return
	}
	s.loops[l.name] = l
	s.order = append(s.order, l)
	if s.ctx != nil {
		s.launch(l)
	}
}

// Start launches every registered loop under a child of ctx. Cancelling ctx
// stops the loops as Stop does, except that only Stop waits for them.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil || s.stopped {
		s.log.Error("Start called twice or after Stop; ignored")
		return
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	for _, l := range s.order {
		s.launch(l)
	}
}

// Stop cancels every loop and waits until all have returned. Loop functions
// must honour ctx for Stop to return.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	s.stopped = true
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// launch starts l's goroutine; s.mu is held.
func (s *Scheduler) launch(l *loop) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(l.done)
		if l.interval > 0 {
			s.runEvery(s.ctx, l)
		} else {
			s.runGo(s.ctx, l)
		}
	}()
}

func (s *Scheduler) runEvery(ctx context.Context, l *loop) {
	t := s.clk.NewTimer(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := s.runOnce(ctx, l); err != nil && ctx.Err() == nil {
			s.log.Warn("loop run failed", "loop", l.name, "error", err)
		}
		t.Reset(l.interval)
	}
}

func (s *Scheduler) runGo(ctx context.Context, l *loop) {
	failures := 0
	for {
		started := s.clk.Now()
		err := s.runOnce(ctx, l)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			s.log.Debug("loop finished", "loop", l.name)
			return
		}
		if s.clk.Since(started) >= RestartBackoffMax {
			failures = 0
		}
		failures++
		delay := RestartDelay(failures, RestartBackoffBase, RestartBackoffMax)
		s.log.Error("loop stopped; restarting", "loop", l.name, "error", err, "in", delay, "consecutive_failures", failures)
		s.m.restarts.WithLabelValues(l.name).Inc()
		t := s.clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// errPanicked marks the error runOnce returns for a recovered panic.
var errPanicked = errors.New("panic")

// runOnce calls l.fn once, turning a panic into an error and recording the
// run in the loop's metrics. A context.Canceled error after cancellation is
// a normal shutdown, not a failure.
func (s *Scheduler) runOnce(ctx context.Context, l *loop) (err error) {
	running := s.m.running.WithLabelValues(l.name)
	running.Set(1)
	start := s.clk.Now()
	defer func() {
		if r := recover(); r != nil {
			s.m.panics.WithLabelValues(l.name).Inc()
			s.log.Error("loop panicked", "loop", l.name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("loop %s: %w: %v", l.name, errPanicked, r)
		}
		running.Set(0)
		s.m.runs.WithLabelValues(l.name).Inc()
		s.m.lastDuration.WithLabelValues(l.name).Set(s.clk.Since(start).Seconds())
		if err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
			s.m.errors.WithLabelValues(l.name).Inc()
		}
	}()
	return l.fn(ctx)
}
