package hosting

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// G01-G5f and F02: an expired placeholder's ref is deleted at the sweep,
// and its data leaves the disk at the first sweep once the prune grace has
// passed too; the repository then leaves the prune schedule.
func TestG01_G5_SweepDeletesAndPrunesExpiredPlaceholders(t *testing.T) {
	r := newRigWith(t, rigOptions{purg: purgatory.Options{PlaceholderTTL: time.Minute}})
	ctx := context.Background()
	a := newKey(t)
	_, repo := r.announce(a, "r")
	r.commit(repo)
	id := a.pr(t, repo, "0000000000000000000000000000000000000001").ID
	c := r.placeholder(repo, id, "abandoned")

	r.clk.Advance(2 * time.Minute)
	if err := r.h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.refs(repo)["refs/nostr/"+id]; ok {
		t.Fatal("the expired placeholder's ref is still served")
	}
	if due, _ := r.purg.DuePrunes(context.Background()); len(due) != 1 {
		t.Fatalf("prune schedule %v, want the repository on it until the grace has passed", due)
	}
	if has, _ := r.repos.HasObjects(ctx, repo, []string{c}); !has[c] {
		t.Fatal("the data was pruned inside the grace")
	}

	r.clk.Advance(pruneGrace + time.Minute)
	if err := r.h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if has, _ := r.repos.HasObjects(ctx, repo, []string{c}); has[c] {
		t.Fatal("the expired placeholder's data is still on disk (F02)")
	}
	if due, _ := r.purg.DuePrunes(context.Background()); len(due) != 0 {
		t.Fatalf("prune schedule %v, want it empty after the prune", due)
	}
}

// G01-P5: an event that waited too long expires; the hunter stops hunting
// it.
func TestG01_P5_SweepExpiresHeldEvents(t *testing.T) {
	r := newRigWith(t, rigOptions{hunter: true, purg: purgatory.Options{TTL: 30 * time.Minute}})
	a := newKey(t)
	_, repo := r.announce(a, "r")
	st := a.state(t, "r", "0000000000000000000000000000000000000002")
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{"0000000000000000000000000000000000000002"}})
	r.clk.Advance(29 * time.Minute)
	if err := r.h.Sweep(context.Background()); err != nil || !r.held(st) {
		t.Fatalf("swept (%v) before its TTL: held %v", err, r.held(st))
	}
	r.clk.Advance(2 * time.Minute)
	if err := r.h.Sweep(context.Background()); err != nil || r.held(st) {
		t.Fatalf("swept (%v) after its TTL: held %v", err, r.held(st))
	}
	if !slices.Contains(r.hunter.forgot, st.ID) || r.repos.Exists(repo) {
		t.Fatalf("the hunter still hunts the expired state (%v) or its empty repository stays", r.hunter.forgot)
	}
}

// git's own housekeeping runs over every repository and leaves what they
// serve; a cancelled run stops with the context's error.
func TestMaintain(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}
	if err := r.repos.Create(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	tip := r.commit(repo)
	if err := r.h.Maintain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.refs(repo)["refs/heads/main"] != tip {
		t.Fatal("maintenance changed what the repository serves")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.h.Maintain(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled maintenance = %v, want context.Canceled", err)
	}
}

// G06-8: a /prs/ repository whose last ref was an expired placeholder is
// removed with it, and its quota freed.
func TestG06_8_SweepRemovesThePRsRepoOfAnExpiredPlaceholder(t *testing.T) {
	r := newRigWith(t, rigOptions{purg: purgatory.Options{PlaceholderTTL: time.Minute}})
	ctx := context.Background()
	a := newKey(t)
	prs := nip34.PRsRepo(a.PK, "r")
	done, err := r.repos.OpenPRs(ctx, prs)
	if err != nil {
		t.Fatal(err)
	}
	r.placeholder(prs, a.pr(t, nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}, "0000000000000000000000000000000000000003").ID, "abandoned")
	done()
	r.clk.Advance(2 * time.Minute)
	if err := r.h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if r.repos.Exists(prs) {
		t.Fatal("the /prs/ repository left without a ref is still there")
	}
	if due, _ := r.purg.DuePrunes(context.Background()); len(due) != 0 {
		t.Fatalf("prune schedule %v: a removed repository needs no prune", due)
	}
}
