package catchup

import (
	"context"
	"sync"
)

// frameOverhead is what a queued frame costs beyond its bytes (slice
// header and allocation), so a flood of tiny frames is bounded too.
const frameOverhead = 64

// frameQueue is the bounded, byte-counted queue between a session's reader
// and its caller. push waits while the queue holds max bytes or more (a
// frame larger than max still goes into an empty queue); pop never waits.
type frameQueue struct {
	mu     sync.Mutex
	frames [][]byte
	bytes  int
	max    int
	err    error // why the reader stopped; set once
	ready  chan struct{}
	space  chan struct{}
}

func newFrameQueue(max int) *frameQueue {
	return &frameQueue{max: max, ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (q *frameQueue) push(ctx context.Context, f []byte) error {
	cost := len(f) + frameOverhead
	for {
		q.mu.Lock()
		if len(q.frames) == 0 || q.bytes+cost <= q.max {
			q.frames = append(q.frames, f)
			q.bytes += cost
			q.mu.Unlock()
			signal(q.ready)
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// pop takes the oldest frame; with none queued it reports the reader's
// error, nil while the reader goes on.
func (q *frameQueue) pop() (f []byte, ok bool, readErr error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.frames) == 0 {
		return nil, false, q.err
	}
	f = q.frames[0]
	q.frames[0] = nil
	q.frames = q.frames[1:]
	q.bytes -= len(f) + frameOverhead
	if len(q.frames) == 0 {
		q.frames = nil // let the backing array go
	}
	signal(q.space)
	return f, true, nil
}

// close records why the reader stopped; frames still queued are delivered
// first.
func (q *frameQueue) close(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
	signal(q.ready)
}
