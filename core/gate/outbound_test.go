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
