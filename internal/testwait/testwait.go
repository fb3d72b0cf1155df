// Package testwait owns how long a test waits for something another
// goroutine, process or peer makes happen: one generous bound for every
// such wait in the repository, instead of ad-hoc 5 s, 10 s or 20 s deadlines
// that pass only on an idle machine.
//
// The bound is minutes, not seconds (longer under -race), because CI runs
// `go test -race ./...` on two cores with packages in parallel and other
// work beside it: a wait that is met at all is met well within it. A
// generous bound never weakens a test: the condition is the assertion, the
// bound only decides how long a broken build takes to say so.
//
// It must never be imported by production code, and it never makes time
// pass for the code under test: timers and timeouts of that code run on
// core/clock.Fake, advanced by the test.
package testwait

import (
	"context"
	"testing"
	"time"
)

// pollMax is the longest pause between two looks at a condition.
const pollMax = 20 * time.Millisecond

// Limit is how long a wait that starts now may take: the bound, or less
// when the test binary's -timeout would end first, so that a failing wait
// reports what it waited for instead of a panic with every goroutine.
func Limit(t testing.TB) time.Duration {
	limit := bound
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := dt.Deadline(); ok {
			// keep a tenth of what is left for the report and the cleanups
			left := time.Until(dl) * 9 / 10
			limit = min(limit, max(left, time.Second))
		}
	}
	return limit
}

// For polls cond until it holds; it fails t if cond does not hold within
// Limit. what names the condition in the failure.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Stepping(t, what, nil, cond)
}

// ForErr is For with a condition that can fail for good (the process
// waited on has exited, a peer answered an error): cond returning an error
// ends the wait at once and fails t with it, instead of waiting out Limit.
func ForErr(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	var err error
	Stepping(t, what, nil, func() bool {
		var ok bool
		ok, err = cond()
		return ok || err != nil
	})
	if err != nil {
		t.Fatalf("testwait: waiting for %s: %v", what, err)
	}
}

// Stepping is For with step called between two looks at cond: a test
// advances its fake clock there, so that timers of the code under test
// fire while the real work (sockets, git, the store) makes progress.
// The pause between looks is fixed (pollMax), so the fake clock advances
// at a steady pace; a fake deadline the test must not reach (a purgatory
// TTL, a round timeout) must lie many steps away, or be jumped to with
// Advance once the real work is done.
func Stepping(t testing.TB, what string, step func(), cond func() bool) {
	t.Helper()
	limit := Limit(t)
	deadline := time.Now().Add(limit)
	pause := time.Millisecond
	if step != nil {
		pause = pollMax
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("testwait: gave up waiting for %s after %v", what, limit)
		}
		if step != nil {
			step()
		}
		time.Sleep(pause)
		pause = min(2*pause, pollMax)
	}
}

// Context returns a context that ends after Limit or when the test ends,
// for calls that take one (dials, reads, subprocesses).
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Limit(t))
	t.Cleanup(cancel)
	return ctx
}

// Deadline is when a wait that starts now must end, for net.Conn deadlines.
func Deadline(t testing.TB) time.Time { return time.Now().Add(Limit(t)) }

// After fires when a wait that starts now has taken too long; it is the
// failure branch of a select on what the test waits for.
func After(t testing.TB) <-chan time.Time { return time.After(Limit(t)) }
