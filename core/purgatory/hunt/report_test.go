package hunt

import (
	"context"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/throttle"
)

// TestRepoReport: the hunter reports what it is doing for one repository
// (issue 26 part 5, the repository page): objects still missing, rounds
// tried, when the next round may start, and how the last fetch from each
// source went, an unreachable host marked skipped; a repository not in
// the queue has no report.
func TestRepoReport(t *testing.T) {
	hs := newHarness(t, DefaultOptions(), throttle.Limits{})
	u1, u2 := "https://one.example/r.git", "https://two.example/r.git"
	hs.sc.remote(u1, KindOther, oid("x"))
	hs.sc.remote(u2, KindNetwork)
	r := repoN("r")
	if _, ok := hs.h.Repo(context.Background(), r); ok {
		t.Fatal("a report for a repository nobody asked the hunter for")
	}
	hs.h.Need(Need{Repo: r, OIDs: []string{oid("x"), oid("y")}, Sources: []string{u1, u2}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond) // one round at 0.5 s, then backoff
	rep, ok := hs.h.Repo(context.Background(), r)
	if !ok {
		t.Fatal("no report for a queued repository")
	}
	if rep.Missing != 1 || rep.Attempts != 1 || rep.Hunting || !rep.Next.Equal(t0.Add(20500*time.Millisecond)) {
		t.Errorf("report %+v: want 1 missing, 1 attempt, next round at 20.5 s", rep)
	}
	if len(rep.Sources) != 2 {
		t.Fatalf("sources %+v", rep.Sources)
	}
	if s := rep.Sources[0]; s.URL != u1 || s.Result != "partial" || s.Skipped || !s.At.Equal(t0.Add(500*time.Millisecond)) {
		t.Errorf("first source %+v: want a partial fetch at 0.5 s", s)
	}
	if s := rep.Sources[1]; s.URL != u2 || s.Result != KindNetwork.String() || !s.Skipped {
		t.Errorf("second source %+v: want a network failure, host skipped", s)
	}
	hs.h.Forget(r)
	hs.settle()
	if _, ok := hs.h.Repo(context.Background(), r); ok {
		t.Error("a report for a forgotten repository")
	}
}
