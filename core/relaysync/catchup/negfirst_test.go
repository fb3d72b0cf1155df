package catchup

import (
	"runtime"
	"testing"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// A negentropy session's frames overtake the events queued before them, so
// a round is answered while fetched events wait to be verified; everything
// else keeps its order, and the queue's byte budget counts both (issue 27
// part 3).
func TestG02_1_NegFramesOvertakeQueuedEvents(t *testing.T) {
	q := newFrameQueue(1 << 20)
	ctx := testwait.Context(t)
	in := []string{
		`["EVENT","ids-1",{}]`,
		`["EVENT","ids-1",{}]`,
		`["NEG-MSG","neg-1","61"]`,
		`["EOSE","ids-1"]`,
		`["NEG-ERR","neg-2","closed"]`,
		`["EVENT","ids-2",{}]`,
	}
	for _, f := range in {
		if err := q.push(ctx, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	if f, ok := q.popNeg(); !ok || string(f) != in[2] {
		t.Fatalf("popNeg %q %v, want the NEG-MSG", f, ok)
	}
	want := []string{in[4], in[0], in[1], in[3], in[5]}
	for i, w := range want {
		f, ok, err := q.pop()
		if !ok || err != nil || string(f) != w {
			t.Fatalf("pop %d: %q %v %v, want %q", i, f, ok, err, w)
		}
	}
	if _, ok := q.popNeg(); ok {
		t.Fatal("popNeg took a frame from an empty queue")
	}
	if q.bytes != 0 {
		t.Fatalf("%d bytes counted in an empty queue", q.bytes)
	}
}

// verifyWantedBetween checks exactly the wanted events, every one, and
// calls between after each chunk with no check running: there a session
// answers the rounds that arrived meanwhile.
func TestG02_1_VerificationLetsRoundsInBetween(t *testing.T) {
	pool := testPool(t)
	n := 5*verifyChunk*runtime.GOMAXPROCS(0) + 3
	batch := make([]frame, 0, n+1)
	for i := 0; i < n; i++ {
		e := *pool[i]
		if i%7 == 0 {
			e.Content += "tampered"
		}
		batch = append(batch, frame{label: "EVENT", sub: "ids-1", evt: &e})
	}
	// not wanted (a request that is not open): tampered, so a check would
	// mark it
	other := *pool[n]
	other.Content += "tampered"
	batch = append(batch, frame{label: "EVENT", sub: "ids-9", evt: &other})
	calls := 0
	verifyWantedBetween(batch, func(sub, _ string) bool { return sub == "ids-1" }, func() { calls++ })
	if want := (n + verifyChunk*runtime.GOMAXPROCS(0) - 1) / (verifyChunk * runtime.GOMAXPROCS(0)); calls != want {
		t.Fatalf("between called %d times for %d events, want %d", calls, n, want)
	}
	for i := 0; i < n; i++ {
		want := ""
		if i%7 == 0 {
			want = "id does not match content"
		}
		if got := batch[i].why; got != want {
			t.Fatalf("event %d: %q, want %q", i, got, want)
		}
	}
	if batch[n].why != "" {
		t.Fatalf("the unwanted event was checked: %q", batch[n].why)
	}
}
