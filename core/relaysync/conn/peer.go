package conn

import (
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/nbd-wtf/go-nostr"
)

// maxWindows bounds the live windows remembered per relay for gap detection;
// windows closed longer ago than windowMemory are forgotten first. A daily
// resync looks back a day, so a little more than that is kept.
const (
	maxWindows   = 256
	windowMemory = 26 * time.Hour
)

// peer is what the pool remembers about a relay URL across reconnects: its
// inbound rate cap (a reconnect must not refill a flooding peer's bucket),
// its NOTICE allowance and when its live subscriptions were open.
type peer struct {
	clk     clock.Clock
	lim     *limiter
	notices *limiter

	mu      sync.Mutex
	windows []window
}

// window is one live subscription's coverage: events matching filters and
// created in [from, to] should have arrived live (to zero: still open).
type window struct {
	conn    *relay
	sub     string
	filters []nostr.Filter // without since/until/limit
	from    time.Time
	to      time.Time
}

func newPeer(clk clock.Clock, o Options) *peer {
	perSec := float64(o.NoticesPerMinute) / 60
	return &peer{clk: clk, lim: newLimiter(clk, o.EventsPerSecond, o.Burst), notices: newLimiter(clk, perSec, 5)}
}

func (p *peer) open(r *relay, sub string, filters []nostr.Filter, from time.Time) {
	stripped := make([]nostr.Filter, len(filters))
	for i, f := range filters {
		f.Since, f.Until, f.Limit, f.LimitZero = nil, nil, 0, false
		stripped[i] = f
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune(from)
	p.windows = append(p.windows, window{conn: r, sub: sub, filters: stripped, from: from})
}

// prune drops windows closed too long ago and, over the bound, the oldest.
func (p *peer) prune(now time.Time) {
	kept := p.windows[:0]
	for _, w := range p.windows {
		if w.to.IsZero() || now.Sub(w.to) < windowMemory {
			kept = append(kept, w)
		}
	}
	for i := len(kept); i < len(p.windows); i++ {
		p.windows[i] = window{}
	}
	p.windows = kept
	if over := len(p.windows) - maxWindows + 1; over > 0 {
		p.windows = append(p.windows[:0], p.windows[over:]...)
	}
}

// close ends r's window for sub ("" ends all of r's).
func (p *peer) close(r *relay, sub string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.windows {
		w := &p.windows[i]
		if w.conn == r && w.to.IsZero() && (sub == "" || w.sub == sub) {
			w.to = at
		}
	}
}

// missedLive reports whether evt, found by a catch-up started at started,
// should have arrived live: a window covering it was open, and it was
// created early enough (grace) not to be still on its way.
func (p *peer) missedLive(evt *nostr.Event, started time.Time, grace time.Duration) bool {
	created := evt.CreatedAt.Time()
	if created.After(started.Add(-grace)) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.windows {
		if created.Before(w.from) || (!w.to.IsZero() && created.After(w.to)) {
			continue
		}
		for _, f := range w.filters {
			if f.Matches(evt) {
				return true
			}
		}
	}
	return false
}
