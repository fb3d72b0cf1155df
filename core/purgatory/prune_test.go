package purgatory

import (
	"context"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/nip34"
)

// The prune schedule outlives the process and follows the newest loss: a
// repository stays on it until a prune covering its latest loss has run
// (F02 follow-up), whichever instance scheduled it.
func TestPruneScheduleSurvivesRestartAndKeepsTheNewestLoss(t *testing.T) {
	eachKV(t, testPruneSchedule)
}

func testPruneSchedule(t *testing.T, newKV func() KV) {
	clk := clock.NewFake(t0)
	kv := newKV()
	p := newP(t, kv, clk)
	hosted := nip34.RepoRef{Pubkey: "aa", Identifier: "r"}
	prs := nip34.PRsRepo("aa", "r")
	for _, s := range []struct {
		r  nip34.RepoRef
		at time.Time
	}{{hosted, t0}, {prs, t0.Add(time.Minute)}, {hosted, t0.Add(2 * time.Minute)}, {hosted, t0.Add(time.Second)}} {
		if err := p.SchedulePrune(context.Background(), s.r, s.at); err != nil {
			t.Fatal(err)
		}
	}
	// restart: another purgatory over the same table
	due, err := newP(t, kv, clk).DuePrunes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 2 || due[0].Repo != prs || !due[0].Since.Equal(t0.Add(time.Minute)) ||
		due[1].Repo != hosted || !due[1].Since.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("schedule after restart: %+v", due)
	}
	// a prune covering an older loss than the one scheduled since keeps it
	if err := p.Pruned(context.Background(), PruneDue{Repo: hosted, Since: t0}); err != nil {
		t.Fatal(err)
	}
	if err := p.Pruned(context.Background(), due[0]); err != nil {
		t.Fatal(err)
	}
	due, _ = p.DuePrunes(context.Background())
	if len(due) != 1 || due[0].Repo != hosted {
		t.Fatalf("schedule after the prunes: %+v", due)
	}
	if err := p.Pruned(context.Background(), due[0]); err != nil {
		t.Fatal(err)
	}
	if due, _ = p.DuePrunes(context.Background()); len(due) != 0 {
		t.Fatalf("schedule not empty: %+v", due)
	}
}
