package githttp

import (
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestRefusalsRememberWhyAPushWasRefused: a refused push of a hosted
// repository is remembered with its class, time and number of refs, newest
// first, refusalsPerRepo at most; an accepted push adds nothing (issue 26
// part 5: the repository page says why the last push was refused).
func TestRefusalsRememberWhyAPushWasRefused(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	rf := NewRefusals(clk)
	ts := newTestServerOn(t, Options{Refusals: rf}, clk)
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	pushRejected(t, ts, owner, "proj", work, "No state events", url, "main")
	got := rf.Last(ref(owner, "proj"))
	if len(got) != 1 || got[0].Class != ClassNoState || got[0].Refs != 1 || !got[0].At.Equal(clk.Now()) {
		t.Fatalf("refusals %+v, want one no_state refusal of 1 ref", got)
	}
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	testkit.GitCommit(t, work, "z")
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x))
	clk.Advance(time.Minute)
	pushRejected(t, ts, owner, "proj", work, "doesn't match push", url, "main")
	got = rf.Last(ref(owner, "proj"))
	if len(got) != 2 || got[0].Class != ClassMismatch || !got[0].At.Equal(clk.Now()) || got[1].Class != ClassNoState {
		t.Fatalf("refusals %+v, want the mismatch first, then the no_state", got)
	}
	for i := 0; i < 2*refusalsPerRepo; i++ {
		rf.note(ref(owner, "proj"), ClassStale, 1)
	}
	if got := rf.Last(ref(owner, "proj")); len(got) != refusalsPerRepo || got[0].Class != ClassStale {
		t.Fatalf("%d refusals kept, want %d", len(got), refusalsPerRepo)
	}
	for i := 0; i < maxRefusalRepos+10; i++ {
		rf.note(ref(owner, "r"+string(rune('a'+i%26))+time.Duration(i).String()), ClassStale, 1)
	}
	rf.mu.Lock()
	n := len(rf.by)
	rf.mu.Unlock()
	if n > maxRefusalRepos {
		t.Fatalf("%d repositories remembered, bound %d", n, maxRefusalRepos)
	}
}
