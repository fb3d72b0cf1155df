package hosting

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// G01-P7: a stored NIP-09 request by the author removes its held
// announcement (by `a`) and state (by `e`); the announcement's empty
// repository goes too. A request by someone else removes nothing.
func TestG01_P7_DeletionRemovesHeldEvents(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, b := newKey(t), newKey(t)
	ann, repo := r.announce(a, "r")
	tip := strings.Repeat("4", 40)
	st := a.state(t, "r", tip)
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{tip}})

	tags := nostr.Tags{{"a", repo.String()}, {"e", st.ID}, {"k"}}
	r.h.Apply(ctx, b.sign(t, nip34.KindDeletion, tags), policy.Decision{Outcome: policy.Store})
	if !r.held(ann) || !r.held(st) || !r.repos.Exists(repo) {
		t.Fatal("another key's deletion request removed held events")
	}

	r.h.Apply(ctx, a.sign(t, nip34.KindDeletion, tags), policy.Decision{Outcome: policy.Store})
	if r.held(ann) || r.held(st) {
		t.Fatalf("held after the author's deletion: announcement %v, state %v", r.held(ann), r.held(st))
	}
	if r.repos.Exists(repo) {
		t.Fatal("the deleted announcement's empty repository was kept")
	}
}
