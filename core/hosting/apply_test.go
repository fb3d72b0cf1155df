package hosting

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// A stored event whose decision says ReleaseHeld releases what its
// repository's data now makes servable; a rejection with no effects
// changes nothing.
func TestApplyReleaseHeldAndPlainRejection(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a := newKey(t)
	ann, repo := r.announce(a, "r")
	issue := a.sign(t, nip34.KindIssue, nostr.Tags{{"a", repo.String()}})
	r.hold(issue, policy.Effect{Kind: policy.AwaitRepo, Repo: repo})
	r.commit(repo)

	r.h.Apply(ctx, a.sign(t, nip34.KindComment, nil), policy.Decision{Outcome: policy.Rejected, Msg: "invalid: no"})
	if r.isPublished(ann) || !r.repos.Exists(repo) {
		t.Fatal("a plain rejection had an effect")
	}
	st := a.state(t, "r", r.refs(repo)["refs/heads/main"])
	r.store.save(t, st)
	r.h.Apply(ctx, st, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.ReleaseHeld, Repo: repo}}})
	if !r.isPublished(ann) || !r.isPublished(issue) || r.purg.Len() != 0 {
		t.Fatalf("published %d, %d still held; want the announcement and its issue released", len(r.published), r.purg.Len())
	}
}

// A stored announcement that evicts another held one (EvictHeld) and
// retires a repository (RemoveRepo) as its effects say.
func TestApplyStoredEvictsAndRetires(t *testing.T) {
	r := newRig(t)
	a, b := newKey(t), newKey(t)
	held, repoA := r.announce(a, "r")
	_, repoB := r.announce(b, "r")
	ann := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "s"}})
	r.h.Apply(context.Background(), ann, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{
		{Kind: policy.EvictHeld, Repo: repoA}, {Kind: policy.RemoveRepo, Repo: repoB}}})
	if r.held(held) || r.repos.Exists(repoA) || r.repos.Exists(repoB) {
		t.Fatalf("held %v, repos %v %v; want the evicted announcement and both empty repositories gone", r.held(held), r.repos.Exists(repoA), r.repos.Exists(repoB))
	}
}
