package gate

import (
	"context"
	"testing"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// The queue never holds more than its limit, counting frames being written.
func TestLimits_OutQueueBounded(t *testing.T) {
	q := newOutQueue(1000, nil)
	frame := make([]byte, 300)
	pushed := 0
	for q.push(frame) {
		pushed++
		if pushed > 10 {
			t.Fatalf("queue took %d frames of 300 bytes under a 1000-byte limit", pushed)
		}
	}
	if pushed != 3 || q.peakBytes() != 900 {
		t.Fatalf("pushed %d (peak %d), want 3 frames, 900 bytes", pushed, q.peakBytes())
	}
	batch := q.take()
	if len(batch) != 3 {
		t.Fatalf("took %d frames, want 3", len(batch))
	}
	if q.push(frame) {
		t.Fatalf("frames being written still count: push must fail")
	}
	q.release(batch, 900)
	if !q.push(frame) {
		t.Fatalf("push refused after the batch was written")
	}
	q.close()
	if !q.push(frame) || len(q.take()) != 0 {
		t.Fatalf("a closed queue must drop frames without refusing them")
	}
}

// pushWait waits for room instead of refusing, and gives up when its
// context ends or the queue closes.
func TestOutQueuePushWait(t *testing.T) {
	q := newOutQueue(10, nil)
	if !q.pushWait(context.Background(), make([]byte, 8)) {
		t.Fatal("push into an empty queue")
	}
	done := make(chan bool, 1)
	go func() { done <- q.pushWait(context.Background(), make([]byte, 8)) }()
	testwait.For(t, "pushWait waiting for room", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.waiting
	})
	select {
	case <-done:
		t.Fatal("pushWait did not wait for room")
	default:
	}
	batch := q.take()
	q.release(batch, 8)
	if !<-done {
		t.Fatal("pushWait failed after room was made")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- q.pushWait(ctx, make([]byte, 8)) }()
	cancel()
	if <-done {
		t.Fatal("pushWait succeeded after its context ended")
	}
	go func() { done <- q.pushWait(context.Background(), make([]byte, 8)) }()
	q.close()
	if <-done {
		t.Fatal("pushWait succeeded on a closed queue")
	}
	// A frame larger than the limit goes once the queue is empty.
	q2 := newOutQueue(10, nil)
	if !q2.pushWait(context.Background(), make([]byte, 100)) {
		t.Fatal("an oversized frame must go into an empty queue")
	}
}

// A client reading its stored results holds up to the limit of them (here
// one frame larger than the limit, which goes into an empty queue); a live
// event for it beside them is queued, not taken for a slow reader. Live
// frames alone are still bounded by the limit, so a client that reads
// nothing is dropped at twice the limit at most.
func TestLimits_LiveFrameBesidePacedStoredResultsIsNotASlowReader(t *testing.T) {
	q := newOutQueue(1000, nil)
	if !q.pushWait(context.Background(), make([]byte, 1500)) {
		t.Fatal("a stored result larger than the limit must go into an empty queue")
	}
	if !q.push(make([]byte, 300)) {
		t.Fatal("a live event beside a stored result being read was refused: its client would be dropped as a slow reader")
	}
	batch := q.take() // the writer takes both; still counted while written
	if !q.push(make([]byte, 600)) {
		t.Fatal("live frames 300+600 under the limit refused while the stored result is written")
	}
	if q.push(make([]byte, 200)) {
		t.Fatal("live frames past the limit accepted: a client that reads nothing would never be dropped")
	}
	q.release(batch, 1800)
	if q.push(make([]byte, 500)) {
		t.Fatal("after the batch, 600 + 500 live bytes must still be over the 1000-byte limit")
	}
	if !q.push(make([]byte, 400)) {
		t.Fatal("600 + 400 live bytes refused under the limit")
	}
}
