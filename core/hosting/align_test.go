package hosting

import (
	"context"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// maintainers announces r for a and b, each listing the other (both
// confirmed, maintainers-v3.md §3), stored, with their bare repositories.
func (r *rig) maintainers(a, b key, d string) (nip34.RepoRef, nip34.RepoRef) {
	r.t.Helper()
	for _, x := range [][2]key{{a, b}, {b, a}} {
		r.store.save(r.t, x[0].sign(r.t, nip34.KindAnnouncement, nostr.Tags{{"d", d}, {"maintainers", x[1].PK}}))
		if err := r.repos.Create(context.Background(), nip34.RepoRef{Pubkey: x[0].PK, Identifier: d}); err != nil {
			r.t.Fatal(err)
		}
	}
	return nip34.RepoRef{Pubkey: a.PK, Identifier: d}, nip34.RepoRef{Pubkey: b.PK, Identifier: d}
}

// G01-P8: a stored state whose objects are in a repository of its
// identifier here moves the refs of every repository it is authoritative
// for, the author's and the other maintainer's, and releases what waited
// (a PR, with its refs/nostr ref).
func TestG01_P8_StoredStateAlignsEveryMaintainersRepo(t *testing.T) {
	r := newRig(t)
	a, b := newKey(t), newKey(t)
	repoA, repoB := r.maintainers(a, b, "r")
	tip := r.commitTo(repoB, "refs/heads/feature", "b's work")
	pr := b.sign(t, nip34.KindPR, nostr.Tags{{"a", repoA.String()}, {"c", tip}})
	r.hold(pr, policy.Effect{Kind: policy.AwaitGitData, Repo: repoA, OIDs: []string{tip}})

	st := a.state(t, "r", tip)
	r.store.save(t, st)
	r.h.Apply(context.Background(), st, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.AlignRepo, Repo: repoA}}})
	for _, repo := range []nip34.RepoRef{repoA, repoB} {
		refs := r.refs(repo)
		if refs["refs/heads/main"] != tip || refs["refs/heads/feature"] != "" {
			t.Errorf("%s refs %v, want the state's: main at its tip, feature gone", repo.URLPath(), refs)
		}
		// G01-G5: the released PR's ref, in every repository with its commit
		if refs["refs/nostr/"+pr.ID] != tip {
			t.Errorf("%s refs %v, want refs/nostr/<PR> at its tip", repo.URLPath(), refs)
		}
	}
	if !r.isPublished(pr) || r.held(pr) {
		t.Error("the PR whose commit the alignment brought stays held")
	}
}

// A stored state whose objects are nowhere here moves nothing, and the log
// says so; an unparsable one is logged and ignored.
func TestAlignWithoutItsObjectsMovesNothing(t *testing.T) {
	r := newRig(t)
	a, b := newKey(t), newKey(t)
	repoA, _ := r.maintainers(a, b, "r")
	tip := r.commit(repoA)
	st := a.state(t, "r", strings.Repeat("6", 40))
	r.store.save(t, st)
	r.logs.Take()
	r.h.Apply(context.Background(), st, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.AlignRepo, Repo: repoA}}})
	if refs := r.refs(repoA); refs["refs/heads/main"] != tip {
		t.Fatalf("refs %v moved to a state whose objects are not here", refs)
	}
	if log := r.logs.Take(); !strings.Contains(log, "state objects not found in any repo: id="+st.ID) {
		t.Fatalf("the log does not say why:\n%s", log)
	}
	bad := a.sign(t, nip34.KindState, nostr.Tags{{"refs/heads/main", tip}}) // no d
	r.h.Apply(context.Background(), bad, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.AlignRepo, Repo: repoA}}})
	if log := r.logs.Take(); !strings.Contains(log, "cannot align to unparsable state: id="+bad.ID) {
		t.Fatalf("the log does not name the unparsable state:\n%s", log)
	}
}

// maintainers-v3.md §4.3: a stored state that is its author's latest but
// not its repository's (a co-maintainer's state is later) moves nothing.
func TestAlignKeepsTheLaterCoMaintainersState(t *testing.T) {
	r := newRig(t)
	a, b := newKey(t), newKey(t)
	repoA, repoB := r.maintainers(a, b, "r")
	old := r.commitTo(repoA, "refs/heads/old", "old")
	cur := r.commitTo(repoA, "refs/heads/main", "current")
	bState := b.signAt(t, nip34.KindState, int64(nostr.Now()), nostr.Tags{{"d", "r"}, {"refs/heads/main", cur}})
	r.store.save(t, bState)
	r.h.Apply(context.Background(), bState, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.AlignRepo, Repo: repoB}}})
	if r.refs(repoB)["refs/heads/main"] != cur {
		t.Fatal("b's state did not reach b's repository")
	}
	aState := a.signAt(t, nip34.KindState, int64(bState.CreatedAt)-60, nostr.Tags{{"d", "r"}, {"refs/heads/main", old}})
	r.store.save(t, aState)
	r.h.Apply(context.Background(), aState, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.AlignRepo, Repo: repoA}}})
	for _, repo := range []nip34.RepoRef{repoA, repoB} {
		if got := r.refs(repo)["refs/heads/main"]; got != cur {
			t.Errorf("%s main at %s, want the later state's %s", repo.URLPath(), got, cur)
		}
	}
}
