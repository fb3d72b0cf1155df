package hosting

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// pr signs k's PR for repo at tip.
func (k key) pr(t *testing.T, repo nip34.RepoRef, tip string, tags ...nostr.Tag) *nostr.Event {
	return k.sign(t, nip34.KindPR, append(nostr.Tags{{"a", repo.String()}, {"c", tip}}, tags...))
}

// placeholder pushes a new commit of content to refs/nostr/<id> of repo
// git-first and records it as the push would.
func (r *rig) placeholder(repo nip34.RepoRef, id, content string) string {
	r.t.Helper()
	c := r.commitTo(repo, "refs/nostr/"+id, content)
	r.h.OnPush(context.Background(), pushed(repo, nil, "198.51.100.5", 100, map[string]string{id: c}))
	return c
}

// placeholderAt pushes refs/nostr/<id> at commit c, already in repo.
func (r *rig) placeholderAt(repo nip34.RepoRef, id, c string) {
	r.t.Helper()
	if err := r.repos.SetRef(context.Background(), repo, "refs/nostr/"+id, c, ""); err != nil {
		r.t.Fatal(err)
	}
	r.h.OnPush(context.Background(), pushed(repo, nil, "198.51.100.5", 100, map[string]string{id: c}))
}

// G01-G5c: a PR event stored after its refs/nostr ref was pushed binds
// it: the ref stays at the PR's tip and is no longer a placeholder that
// expires.
func TestG01_G5_StoredPRBindsItsPlaceholder(t *testing.T) {
	r := newRig(t)
	a := newKey(t)
	_, repo := r.announce(a, "r")
	r.commit(repo)
	tip := r.commitTo(repo, "refs/heads/pr", "the PR")
	pr := a.pr(t, repo, tip)
	r.placeholderAt(repo, pr.ID, tip)
	r.h.Apply(context.Background(), pr, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.BindNostrRef, Repo: repo, OIDs: []string{tip}}}})
	if got := r.refs(repo)["refs/nostr/"+pr.ID]; got != tip {
		t.Fatalf("refs/nostr/<PR> at %q, want the PR's tip", got)
	}
	if n := r.purg.Placeholders(); n != 0 {
		t.Fatalf("%d placeholders still waiting, want the bound one gone", n)
	}
}

// G01-G5c: a placeholder at another commit than the PR event's is deleted
// when the PR arrives, held (its tip not here) or stored, and its data is
// scheduled for pruning (F02).
func TestG01_G5_PlaceholderAtAnotherCommitIsDeleted(t *testing.T) {
	for _, held := range []bool{true, false} {
		r := newRig(t)
		a := newKey(t)
		_, repo := r.announce(a, "r")
		r.commit(repo)
		want := r.commitTo(repo, "refs/heads/want", "wanted")
		pr := a.pr(t, repo, want)
		r.placeholder(repo, pr.ID, "something else")
		if held {
			r.hold(pr, policy.Effect{Kind: policy.AwaitGitData, Repo: repo, OIDs: []string{want}})
		} else {
			r.h.Apply(context.Background(), pr, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.BindNostrRef, Repo: repo, OIDs: []string{want}}}})
		}
		if got, ok := r.refs(repo)["refs/nostr/"+pr.ID]; ok && (held || got != want) {
			t.Errorf("held %v: refs/nostr/<PR> at %s, want the placeholder deleted", held, got)
		}
		if r.purg.Placeholders() != 0 {
			t.Errorf("held %v: the settled placeholder still waits", held)
		}
		if due, err := r.purg.DuePrunes(context.Background()); err != nil || len(due) != 1 || due[0].Repo != repo {
			t.Errorf("held %v: prune schedule %v (%v), want %s", held, due, err, repo.URLPath())
		}
	}
}

// G01-G5: a stored PR's ref is set in every repository of its identifier
// here that has its commit, and only there.
func TestG01_G5_BindInEveryRepoWithTheCommit(t *testing.T) {
	r := newRig(t)
	a, b := newKey(t), newKey(t)
	repoA, repoB := r.maintainers(a, b, "r")
	tip := r.commit(repoA)
	pr := a.pr(t, repoA, tip)
	r.h.Apply(context.Background(), pr, policy.Decision{Outcome: policy.Store, Effects: []policy.Effect{{Kind: policy.BindNostrRef, Repo: repoA, OIDs: []string{tip}}}})
	if got := r.refs(repoA)["refs/nostr/"+pr.ID]; got != tip {
		t.Fatalf("a's refs/nostr/<PR> at %q, want %s", got, tip)
	}
	if _, ok := r.refs(repoB)["refs/nostr/"+pr.ID]; ok {
		t.Fatal("a ref was set in a repository without the PR's commit")
	}
}
