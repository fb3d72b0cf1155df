package githttp

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
)

// errSlowBody is a request body that arrived slower than the minimum rate.
var errSlowBody = errors.New("request body arrived too slowly")

// rateReader cuts a request body that brings fewer than min bytes in any
// window of time spent waiting for it (audit 2026-11, F04, F08: one byte
// every 5 s held a git process, and the repository lock, for an hour).
// Only time blocked in Read counts: while git digests what it got, the
// client is not to blame. A Read still blocked when its window ends is
// interrupted with abort (a read deadline in the past), so the client
// cannot hold a request by sending nothing at all either.
type rateReader struct {
	r      io.Reader
	clk    clock.Clock
	min    int64
	window time.Duration
	abort  func()

	mu        sync.Mutex
	waited    time.Duration // time spent in Read in the current window, before readStart
	got       int64         // bytes read in the current window
	reading   int           // generation of the Read in progress, 0 when none
	gen       int
	readStart time.Time // when the Read in progress started counting
	timer     clock.Timer
	slow      bool
}

func newRateReader(r io.Reader, clk clock.Clock, min int64, window time.Duration, abort func()) io.Reader {
	if min <= 0 || window <= 0 {
		return r
	}
	return &rateReader{r: r, clk: clk, min: min, window: window, abort: abort}
}

func (b *rateReader) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.slow {
		b.mu.Unlock()
		return 0, b.err()
	}
	b.gen++
	gen := b.gen
	b.reading = gen
	b.readStart = b.clk.Now()
	b.arm(gen, b.window-b.waited)
	b.mu.Unlock()

	n, err := b.r.Read(p)

	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer.Stop()
	b.reading = 0
	b.got += int64(n)
	b.waited += b.clk.Since(b.readStart)
	if b.waited >= b.window {
		if b.got < b.min {
			b.slow = true
		}
		b.waited, b.got = 0, 0
	}
	if b.slow {
		return n, b.err()
	}
	return n, err
}

// arm ends the current window after d of waiting in Read gen. Called
// under mu.
func (b *rateReader) arm(gen int, d time.Duration) {
	b.timer = b.clk.AfterFunc(d, func() { b.windowEnds(gen) })
}

// windowEnds runs when a window ends while Read gen still waits: too few
// bytes cut the body, enough start the next window.
func (b *rateReader) windowEnds(gen int) {
	b.mu.Lock()
	if b.reading != gen {
		b.mu.Unlock()
		return
	}
	if b.got < b.min {
		b.slow = true
		b.mu.Unlock()
		if b.abort != nil {
			b.abort()
		}
		return
	}
	b.waited, b.got = 0, 0
	b.readStart = b.clk.Now()
	b.arm(gen, b.window)
	b.mu.Unlock()
}

func (b *rateReader) err() error {
	return fmt.Errorf("%w: less than %d bytes in %s", errSlowBody, b.min, b.window)
}
