package negindex

import (
	"math"
	"time"
	"unsafe"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/memlimit"
)

// WholeHold is how long the index keeps the whole-store set strongly after
// the last whole-store Select. Held only weakly, the set was garbage at
// the first collection after its last session ended, and the next session
// made it again: at 5,000,000 events (~180 MB of pairs) 1,876 ms of server
// CPU per in-sync reconciliation against 3.34 ms at 1,000,000, where
// collections between sessions were rarer (issue 27 part 3). Peers that
// sync after a restart or on the same timer come within minutes of each
// other; a session running longer holds the set itself meanwhile.
const WholeHold = 10 * time.Minute

// wholeHoldShare: the held set may take at most 1/wholeHoldShare of the
// runtime's soft memory limit (server.memory_limit_mb). A limit sized as
// config.md recommends (2.2× the live heap, ~350 B per event) leaves a set
// of 37 B per event ~5 % of it, so the hold covers stores up to ~5× what
// the limit was sized for (5,000,000 events on the default 768 MiB: 176
// MiB). Past that the collector already runs for the limit and the set is
// left to the weak pointer. Holding never raises the peak: every session
// over the whole store holds the same set while it runs.
const wholeHoldShare = 4

// wholeHold keeps the whole-store set strongly, under Index.cacheMu.
type wholeHold struct {
	clk    clock.Clock
	d      time.Duration
	budget func() int64 // bytes a held set may take

	held  *shared
	since time.Time // the last whole-store Select
	timer clock.Timer
}

// wholeHoldBudget is wholeHoldShare of the runtime's memory limit; without
// a limit, any size (the set is then bounded by the store: 37 B per
// indexed event, a fifth of the index itself).
func wholeHoldBudget() int64 {
	l := memlimit.Limit()
	if l <= 0 {
		return math.MaxInt64
	}
	return l / wholeHoldShare
}

// SetClock drives the whole-store set's hold (WholeHold) by c instead of
// the wall clock. Call before the index is used.
func (ix *Index) SetClock(c clock.Clock) {
	ix.cacheMu.Lock()
	defer ix.cacheMu.Unlock()
	ix.hold.clk = c
}

// bytes is the heap sh takes once its running sums are made.
func (sh *shared) bytes() int64 {
	return int64(len(sh.items))*int64(unsafe.Sizeof(item{})) + int64(len(sh.items)/sumStep+1)*int64(unsafe.Sizeof(sum256{}))
}

// holdLocked holds sh from now for WholeHold, unless it is over the
// budget. Called with ix.cacheMu held.
func (ix *Index) holdLocked(sh *shared) {
	h := &ix.hold
	if h.d <= 0 || sh.bytes() > h.budget() {
		ix.releaseLocked()
		return
	}
	h.held, h.since = sh, h.clk.Now()
	if h.timer == nil {
		h.timer = h.clk.AfterFunc(h.d, ix.holdExpired)
	}
}

// holdExpired is the hold's timer: it lets the set go once WholeHold has
// passed since the last whole-store Select, or re-arms for the remainder.
func (ix *Index) holdExpired() {
	ix.cacheMu.Lock()
	defer ix.cacheMu.Unlock()
	h := &ix.hold
	if h.held == nil {
		return
	}
	if idle := h.clk.Since(h.since); idle < h.d {
		h.timer.Reset(h.d - idle)
		return
	}
	h.held, h.timer = nil, nil
}

// releaseLocked lets the held set go. Called with ix.cacheMu held.
func (ix *Index) releaseLocked() {
	h := &ix.hold
	if h.timer != nil {
		h.timer.Stop()
	}
	h.held, h.timer = nil, nil
}

// changed counts a change of the index: the whole-store set no longer
// describes it and is let go at once. Called with ix.mu held for writing.
func (ix *Index) changed() {
	ix.version++
	ix.cacheMu.Lock()
	if ix.hold.held != nil {
		ix.releaseLocked()
	}
	ix.cacheMu.Unlock()
}
