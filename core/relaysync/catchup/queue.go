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
//
// A negentropy session's frames (NEG-MSG, NEG-ERR) overtake the queued
// events: the next round is answered while the fetched events wait to be
// verified, not after (at 1,000,000 events with 1 % missing the round trips
// otherwise queued behind ~2 s of signature checks; issue 27 part 3). Only
// their order relative to other frames changes: the session's own frames
// keep theirs, and what answers the id requests keeps its own.
type frameQueue struct {
	mu     sync.Mutex
	frames [][]byte
	neg    [][]byte // NEG-MSG/NEG-ERR frames, taken before frames
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
		if q.len() == 0 || q.bytes+cost <= q.max {
			if isNegFrame(f) {
				q.neg = append(q.neg, f)
			} else {
				q.frames = append(q.frames, f)
			}
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

func (q *frameQueue) len() int { return len(q.frames) + len(q.neg) }

// isNegFrame reports a negentropy session's frame (label's verbs).
func isNegFrame(f []byte) bool {
	switch label(f) {
	case "NEG-MSG", "NEG-ERR", "NEG-ERROR":
		return true
	}
	return false
}

// pop takes the oldest negentropy frame, else the oldest other frame; with
// none queued it reports the reader's error, nil while the reader goes on.
func (q *frameQueue) pop() (f []byte, ok bool, readErr error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case len(q.neg) > 0:
		return q.take(&q.neg), true, nil
	case len(q.frames) > 0:
		return q.take(&q.frames), true, nil
	}
	return nil, false, q.err
}

// popNeg takes the oldest negentropy frame, if one is queued.
func (q *frameQueue) popNeg() (f []byte, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.neg) == 0 {
		return nil, false
	}
	return q.take(&q.neg), true
}

// take removes the first frame of lane; q.mu is held.
func (q *frameQueue) take(lane *[][]byte) []byte {
	f := (*lane)[0]
	(*lane)[0] = nil
	*lane = (*lane)[1:]
	q.bytes -= len(f) + frameOverhead
	if len(*lane) == 0 {
		*lane = nil // let the backing array go
	}
	signal(q.space)
	return f
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
