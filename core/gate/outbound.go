package gate

import "sync"

// outQueue holds frames waiting to be written to one client. Producers (the
// backend reader, the negentropy server, timers) never block on it, so a
// client that stops reading cannot stall khatru or anyone else; instead the
// queue refuses a frame once the bytes it holds, including the frames being
// written, would exceed the limit, and the caller disconnects the client.
type outQueue struct {
	mu      sync.Mutex
	frames  [][]byte
	spare   [][]byte
	pending int
	peak    int
	limit   int
	closed  bool
	wake    chan struct{}
}

func newOutQueue(limit int) *outQueue {
	return &outQueue{limit: limit, wake: make(chan struct{}, 1)}
}

// push queues b, which the queue now owns. It reports false when b would
// take the queue over its limit; b is then dropped.
func (q *outQueue) push(b []byte) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return true
	}
	if q.pending+len(b) > q.limit {
		q.mu.Unlock()
		return false
	}
	q.frames = append(q.frames, b)
	q.pending += len(b)
	q.peak = max(q.peak, q.pending)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take hands the writer everything queued so far.
func (q *outQueue) take() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.frames
	q.frames = q.spare[:0]
	q.spare = nil
	return batch
}

// release returns a written batch of n bytes, and its slice for reuse.
func (q *outQueue) release(batch [][]byte, n int) {
	clear(batch)
	q.mu.Lock()
	q.pending -= n
	if q.spare == nil && cap(batch) <= 1024 {
		q.spare = batch[:0]
	}
	q.mu.Unlock()
}

// close drops everything queued and refuses nothing from now on.
func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.frames = nil
	q.spare = nil
	q.pending = 0
	q.mu.Unlock()
}

func (q *outQueue) peakBytes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.peak
}
