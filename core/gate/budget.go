package gate

import (
	"context"
	"sync"
	"sync/atomic"
)

// byteBudget bounds bytes held by work in flight across every connection
// (max_inflight_event_bytes, audit F05). A reader that cannot take its
// frame's bytes waits, and so stops reading its socket: the flood stays in
// the client's TCP buffers, not in this process. A frame larger than the
// whole budget goes once nothing else holds any, so it is never refused.
type byteBudget struct {
	limit int64

	mu   sync.Mutex
	used int64
	room chan struct{} // closed and replaced when bytes are released
}

func newByteBudget(limit int64) *byteBudget {
	return &byteBudget{limit: limit, room: make(chan struct{})}
}

// acquire takes n bytes, waiting for room; false if ctx ended first.
func (b *byteBudget) acquire(ctx context.Context, n int64) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return true
		}
		room := b.room
		b.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.room)
	b.room = make(chan struct{})
	b.mu.Unlock()
}

func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// sharedBudget counts the bytes queued to every client together
// (max_total_outbound_bytes, audit F06). Each outQueue adds and removes
// its own bytes; over the limit, queues stop taking stored results (they
// wait for their own bytes to drain) and refuse live events once they
// hold more than sharedLowWater, which drops that client as a slow reader.
type sharedBudget struct {
	limit int64
	used  atomic.Int64
}

// sharedLowWater is what a connection may hold while the relay-wide
// budget is exhausted: a client that reads keeps well below it, one that
// stopped reading does not.
const sharedLowWater = 1 << 20

func (s *sharedBudget) over() bool { return s != nil && s.used.Load() > s.limit }

func (s *sharedBudget) add(n int) {
	if s != nil {
		s.used.Add(int64(n))
	}
}
