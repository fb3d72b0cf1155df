package gate

import "testing"

// The queue never holds more than its limit, counting frames being written.
func TestLimits_OutQueueBounded(t *testing.T) {
	q := newOutQueue(1000)
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
