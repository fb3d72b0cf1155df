package gate

import (
	"context"
	"sync"
)

// outQueue holds frames waiting to be written to one client, bounded in
// bytes (including the frames being written). Frames that cannot wait (live
// events from other clients' writes, answers of the reader) are refused
// once the bound is reached, and the caller drops the client as a slow
// reader, so a client that stops reading stalls no one. Frames the client
// asked for and that may wait (stored results, OKs) wait for room instead:
// a client reading a large result as fast as it can is not dropped.
//
// The frames that cannot wait are bounded by what they add beside the paced
// ones: a client reading its stored results as fast as it can holds up to
// the limit of them in the queue (one frame above it if that frame alone is
// larger), and a live event for it then must not count it as a slow reader
// (under load a bystander reading 5 MB of issues was dropped for a live
// issue, TestAbuse_F25_PostgresCannotBePinned). A client that reads nothing
// is still dropped, at twice the limit at most; over the relay-wide budget
// (F06) every unread byte counts, as before.
type outQueue struct {
	mu      sync.Mutex
	frames  [][]byte
	spare   [][]byte
	paced   []bool // per queued frame: a stored result or an OK (pushWait)
	pending int
	// pacedBytes is the part of pending queued by pushWait, and batchPaced
	// that part of the batch being written (released with it).
	pacedBytes int
	batchPaced int
	peak       int
	limit      int
	closed     bool
	wake       chan struct{}
	room       chan struct{} // closed and replaced when bytes are released
	waiting    bool          // someone waits on room
	shared     *sharedBudget // every queue's bytes together; nil: no bound
}

func newOutQueue(limit int, shared *sharedBudget) *outQueue {
	return &outQueue{limit: limit, wake: make(chan struct{}, 1), room: make(chan struct{}), shared: shared}
}

// push queues b, which the queue now owns. It reports false when b would
// take the queue over its limit; b is then dropped.
func (q *outQueue) push(b []byte) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return true
	}
	// over the relay-wide budget every unread byte counts (F06): a
	// connection holding more than the low-water mark is dropped
	live := q.pending - q.pacedBytes + len(b)
	if live > q.limit || (q.shared.over() && q.pending+len(b) > sharedLowWater) {
		q.mu.Unlock()
		return false
	}
	q.appendLocked(b, false)
	q.mu.Unlock()
	q.signal()
	return true
}

// pushWait queues b, waiting while the queue is full (a frame larger than
// the limit goes once the queue is empty). It reports false if ctx ended or
// the queue was closed first.
func (q *outQueue) pushWait(ctx context.Context, b []byte) bool {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return false
		}
		// Over the relay-wide budget a queue takes a stored result only
		// when empty: each connection then holds at most one frame more
		// than it reads, however many never read (F06).
		if q.pending == 0 || (q.pending+len(b) <= q.limit && !q.shared.over()) {
			q.appendLocked(b, true)
			q.mu.Unlock()
			q.signal()
			return true
		}
		room := q.room
		q.waiting = true
		q.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return false
		}
	}
}

func (q *outQueue) appendLocked(b []byte, paced bool) {
	q.frames = append(q.frames, b)
	q.paced = append(q.paced, paced)
	if paced {
		q.pacedBytes += len(b)
	}
	q.pending += len(b)
	q.shared.add(len(b))
	q.peak = max(q.peak, q.pending)
}

func (q *outQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take hands the writer everything queued so far.
func (q *outQueue) take() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch := q.frames
	for i, p := range q.paced {
		if p {
			q.batchPaced += len(batch[i])
		}
	}
	q.paced = q.paced[:0]
	q.frames = q.spare[:0]
	q.spare = nil
	return batch
}

// release returns a written batch of n bytes, and its slice for reuse.
func (q *outQueue) release(batch [][]byte, n int) {
	clear(batch)
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.pending -= n
	q.pacedBytes -= q.batchPaced
	q.batchPaced = 0
	q.shared.add(-n)
	if q.spare == nil && cap(batch) <= 1024 {
		q.spare = batch[:0]
	}
	if q.waiting {
		close(q.room)
		q.room = make(chan struct{})
		q.waiting = false
	}
	q.mu.Unlock()
}

// close drops everything queued, refuses nothing from now on and wakes
// every waiter.
func (q *outQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.room)
	}
	q.frames = nil
	q.spare = nil
	q.paced = nil
	q.shared.add(-q.pending)
	q.pending, q.pacedBytes, q.batchPaced = 0, 0, 0
	q.mu.Unlock()
}

func (q *outQueue) peakBytes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.peak
}
