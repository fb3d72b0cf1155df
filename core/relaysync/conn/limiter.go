package conn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
)

// limiter is a token bucket on the injected clock: rate tokens a second, at
// most burst saved up. One per relay caps what a peer can make us verify
// and run through the pipeline, live and catch-up together (relays.md §5
// item 10: a malicious relay can flood valid junk).
type limiter struct {
	clk   clock.Clock
	rate  float64
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newLimiter(clk clock.Clock, rate float64, burst int) *limiter {
	return &limiter{clk: clk, rate: rate, burst: float64(burst), tokens: float64(burst), last: clk.Now()}
}

// reserve takes one token and returns how long the caller must wait before
// using it (0: at once). Tokens may go negative: waiters queue up in the
// debt, so a flood is paced rather than dropped.
func (l *limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	if el := now.Sub(l.last); el > 0 {
		l.tokens = min(l.burst, l.tokens+el.Seconds()*l.rate)
		l.last = now
	}
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.rate * float64(time.Second))
}

// wait blocks until a token is available or ctx ends. It reports whether
// it had to wait, for the metrics.
func (l *limiter) wait(ctx context.Context) (waited bool, err error) {
	d := l.reserve()
	if d <= 0 {
		return false, nil
	}
	t := l.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true, nil
	case <-ctx.Done():
		l.refund()
		return true, fmt.Errorf("wait for the relay's inbound rate cap: %w", ctx.Err())
	}
}

// refund returns the token of a wait that was abandoned.
func (l *limiter) refund() {
	l.mu.Lock()
	l.tokens = min(l.burst, l.tokens+1)
	l.mu.Unlock()
}

// allow takes a token if one is available now, without waiting.
func (l *limiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	if el := now.Sub(l.last); el > 0 {
		l.tokens = min(l.burst, l.tokens+el.Seconds()*l.rate)
		l.last = now
	}
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
