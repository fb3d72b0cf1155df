package testwait

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeTB is a test that records its failure and ends its goroutine the way
// testing.T.Fatalf does, with an optional -timeout deadline.
type fakeTB struct {
	testing.TB
	deadline time.Time
	failed   string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Deadline() (time.Time, bool) { return f.deadline, !f.deadline.IsZero() }

// run calls fn on its own goroutine, as a test body, and waits for it.
func run(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	looks := 0
	For(t, "the third look", func() bool { looks++; return looks == 3 })
	if looks != 3 {
		t.Fatalf("looked %d times, want 3", looks)
	}
}

func TestSteppingStepsBetweenLooksOnly(t *testing.T) {
	looks, steps := 0, 0
	Stepping(t, "the fourth look", func() { steps++ }, func() bool { looks++; return looks == 4 })
	if steps != 3 {
		t.Fatalf("%d steps for %d looks, want 3", steps, looks)
	}
}

func TestLimitIsMinutesButEndsBeforeTheTestBinary(t *testing.T) {
	if got := Limit(&fakeTB{}); got < 2*time.Minute {
		t.Fatalf("Limit without a -timeout = %v, want minutes", got)
	}
	got := Limit(&fakeTB{deadline: time.Now().Add(20 * time.Second)})
	if got > 18*time.Second || got < 17*time.Second {
		t.Fatalf("Limit 20 s before -timeout = %v, want nine tenths of it", got)
	}
}

func TestForFailsNamingWhatItWaitedFor(t *testing.T) {
	f := &fakeTB{deadline: time.Now().Add(time.Second)} // Limit: its floor of 1 s
	run(func() { For(f, "a condition that never holds", func() bool { return false }) })
	if !strings.Contains(f.failed, "a condition that never holds") {
		t.Fatalf("failure %q does not name the condition", f.failed)
	}
}

func TestForErrEndsAtTheFirstErrorAndReportsIt(t *testing.T) {
	f := &fakeTB{} // Limit: minutes; the error must end the wait long before
	looks := 0
	run(func() {
		ForErr(f, "a process that exits", func() (bool, error) {
			looks++
			if looks == 2 {
				return false, fmt.Errorf("exited with status 3")
			}
			return false, nil
		})
	})
	if looks != 2 || !strings.Contains(f.failed, "a process that exits") || !strings.Contains(f.failed, "exited with status 3") {
		t.Fatalf("after %d looks, failure %q", looks, f.failed)
	}
	looks = 0
	ForErr(t, "the second look", func() (bool, error) { looks++; return looks == 2, nil })
	if looks != 2 {
		t.Fatalf("looked %d times, want 2", looks)
	}
}
