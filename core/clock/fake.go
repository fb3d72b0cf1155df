package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a manually advanced clock for tests. Timers, tickers and AfterFunc
// callbacks fire in deadline order, deterministically, when Advance or Set
// moves the time past their deadline. Channel sends never block: like the
// runtime's timers, a tick that nobody has read is dropped.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     int
	waiters []*fakeWaiter
	// changed is closed and replaced whenever a waiter is added, so tests can
	// wait until the code under test has armed its timer (BlockUntil).
	changed chan struct{}
}

type fakeWaiter struct {
	at     time.Time
	seq    int
	period time.Duration // >0 for tickers
	ch     chan time.Time
	fn     func()
	active bool
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

func (f *Fake) NewTimer(d time.Duration) Timer {
	w := &fakeWaiter{ch: make(chan time.Time, 1)}
	f.arm(w, d)
	return &fakeTimer{f: f, w: w}
}

func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	w := &fakeWaiter{fn: fn}
	f.arm(w, d)
	return &fakeTimer{f: f, w: w}
}

func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	w := &fakeWaiter{ch: make(chan time.Time, 1), period: d}
	f.arm(w, d)
	return &fakeTicker{f: f, w: w}
}

func (f *Fake) arm(w *fakeWaiter, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	w.seq = f.seq
	w.at = f.now.Add(d)
	if !w.active {
		w.active = true
		f.waiters = append(f.waiters, w)
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Fake) disarm(w *fakeWaiter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !w.active {
		return false
	}
	w.active = false
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	return true
}

// Advance moves the clock forward by d, firing every timer whose deadline is
// reached, in deadline order, with Now() equal to each deadline as it fires.
func (f *Fake) Advance(d time.Duration) {
	f.Set(f.Now().Add(d))
}

// Set moves the clock to t (never backwards), firing due timers in order.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		if len(f.waiters) == 0 {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		sort.Slice(f.waiters, func(i, j int) bool {
			a, b := f.waiters[i], f.waiters[j]
			if !a.at.Equal(b.at) {
				return a.at.Before(b.at)
			}
			return a.seq < b.seq
		})
		w := f.waiters[0]
		if w.at.After(t) {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		if w.at.After(f.now) {
			f.now = w.at
		}
		now := f.now
		if w.period > 0 {
			w.at = w.at.Add(w.period)
		} else {
			w.active = false
			f.waiters = f.waiters[1:]
		}
		f.mu.Unlock()
		if w.fn != nil {
			w.fn()
		} else {
			select {
			case w.ch <- now:
			default:
			}
		}
	}
}

// Pending reports how many timers and tickers are armed.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits until at least n timers or tickers are armed, so a test can
// advance the clock only after the goroutine under test has started waiting.
// It gives up after timeout of real time and reports whether n was reached.
func (f *Fake) BlockUntil(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		if len(f.waiters) >= n {
			f.mu.Unlock()
			return true
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

type fakeTimer struct {
	f *Fake
	w *fakeWaiter
}

func (t *fakeTimer) C() <-chan time.Time { return t.w.ch }
func (t *fakeTimer) Stop() bool          { return t.f.disarm(t.w) }
func (t *fakeTimer) Reset(d time.Duration) bool {
	was := t.f.disarm(t.w)
	t.f.arm(t.w, d)
	return was
}

type fakeTicker struct {
	f *Fake
	w *fakeWaiter
}

func (t *fakeTicker) C() <-chan time.Time { return t.w.ch }
func (t *fakeTicker) Stop()               { t.f.disarm(t.w) }
func (t *fakeTicker) Reset(d time.Duration) {
	t.f.disarm(t.w)
	t.w.period = d
	t.f.arm(t.w, d)
}
