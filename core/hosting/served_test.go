package hosting

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

func (k key) signAt(t *testing.T, kind int, at int64, tags nostr.Tags) *nostr.Event {
	return k.Sign(t, &nostr.Event{Kind: kind, Tags: tags, CreatedAt: nostr.Timestamp(at)})
}

// TestServedAgainstTheSignedState: the repository page's comparison of
// the served refs with the authoritative state (issue 26 part 5): in sync;
// then a newer stored state whose commit is not here, listed as a
// difference with its object missing; a newer state held in purgatory by a
// maintainer is listed with when it was held, a stranger's is not.
func TestServedAgainstTheSignedState(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, stranger := newKey(t), newKey(t)
	repo := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}
	r.store.save(t, a.signAt(t, nip34.KindAnnouncement, 100, nostr.Tags{{"d", "r"}}))
	if err := r.repos.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	tip := r.commit(repo)
	s1 := a.signAt(t, nip34.KindState, 200, nostr.Tags{{"d", "r"}, {"refs/heads/main", tip}, {"HEAD", "ref: refs/heads/main"}})
	r.store.save(t, s1)
	refs, err := r.repos.Refs(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.h.Served(ctx, repo, refs)
	if err != nil || got.Signed == nil || got.Signed.EventID != s1.ID || len(got.Differs) != 0 || got.Missing != 0 || len(got.Held) != 0 {
		t.Fatalf("in sync: %+v (%v)", got, err)
	}

	lost := strings.Repeat("f", 40)
	s2 := a.signAt(t, nip34.KindState, 300, nostr.Tags{{"d", "r"}, {"refs/heads/main", lost}, {"refs/tags/v1", tip}})
	r.store.save(t, s2)
	held := a.signAt(t, nip34.KindState, 400, nostr.Tags{{"d", "r"}, {"refs/heads/main", strings.Repeat("e", 40)}})
	theirs := stranger.signAt(t, nip34.KindState, 500, nostr.Tags{{"d", "r"}, {"refs/heads/main", strings.Repeat("d", 40)}})
	for _, evt := range []*nostr.Event{held, theirs} {
		d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{evt.Tags[1][1]}}}}
		if _, err := r.h.Hold(ctx, evt, d, policy.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = r.h.Served(ctx, repo, refs)
	if err != nil || got.Signed == nil || got.Signed.EventID != s2.ID || got.Missing != 1 {
		t.Fatalf("behind: %+v (%v)", got, err)
	}
	want := []RefDiff{{Ref: "refs/heads/main", Signed: lost, Served: tip}, {Ref: "refs/tags/v1", Signed: tip}}
	if len(got.Differs) != 2 || got.Differs[0] != want[0] || got.Differs[1] != want[1] {
		t.Fatalf("differences %+v, want %+v", got.Differs, want)
	}
	if len(got.Held) != 1 || got.Held[0].EventID != held.ID || got.Held[0].HeldSince.IsZero() || got.Held[0].Refs != 1 {
		t.Fatalf("held %+v, want the maintainer's newer state only", got.Held)
	}
}
