package githttp

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
)

// scriptedReader returns reads of the given sizes, advancing the fake
// clock before each by the matching delay.
type scriptedReader struct {
	clk    *clock.Fake
	sizes  []int
	delays []time.Duration
}

func (s *scriptedReader) Read(p []byte) (int, error) {
	if len(s.sizes) == 0 {
		return 0, io.EOF
	}
	s.clk.Advance(s.delays[0])
	n := min(s.sizes[0], len(p))
	s.sizes, s.delays = s.sizes[1:], s.delays[1:]
	return n, nil
}

type flushCounter struct {
	*httptest.ResponseRecorder
	flushes []int // bytes written when each flush happened
}

func (f *flushCounter) Flush() { f.flushes = append(f.flushes, f.Body.Len()) }

func TestStreamFlushesOnlySlowOutputAtMostOncePerSecond(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &handler{clk: fake}
	const full = 1024
	src := &scriptedReader{clk: fake,
		// full reads (fast pack data) never flush, however slow; short reads
		// flush only when a second has passed since the last flush.
		sizes:  []int{full, full, 10, 10, 10, 10, full},
		delays: []time.Duration{0, 2 * time.Second, 0, 500 * time.Millisecond, 600 * time.Millisecond, 100 * time.Millisecond, 5 * time.Second},
	}
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	if err := h.stream(rec, rec, src, make([]byte, full)); err != nil {
		t.Fatal(err)
	}
	want := []int{2*full + 10, 2*full + 30}
	if len(rec.flushes) != len(want) || rec.flushes[0] != want[0] || rec.flushes[1] != want[1] {
		t.Fatalf("flushes at %v, want %v", rec.flushes, want)
	}
	if rec.Body.Len() != 3*full+40 {
		t.Fatalf("wrote %d bytes", rec.Body.Len())
	}
}
