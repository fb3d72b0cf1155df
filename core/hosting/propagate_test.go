package hosting

import (
	"context"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/policy"
)

// G01-G4 part 3: a push of the state to one maintainer's repository brings
// the other maintainer's repository here to the same refs and HEAD, and a
// maintainer's repository not hosted here is skipped without an error.
func TestG01_G4_PropagateToTheOtherMaintainersRepo(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, b := newKey(t), newKey(t)
	repoA, repoB := r.maintainers(a, b, "r")
	tip := r.commit(repoA)
	st := a.state(t, "r", tip)
	r.hold(st, policy.Effect{Kind: policy.AwaitGitData, Repo: repoA, OIDs: []string{tip}})

	r.h.OnPush(ctx, pushed(repoA, st, "198.51.100.9", 0, nil))
	if refs := r.refs(repoB); refs["refs/heads/main"] != tip {
		t.Fatalf("b's repository refs %v, want the pushed state", refs)
	}
	if head, err := r.repos.Head(ctx, repoB); err != nil || head != "refs/heads/main" {
		t.Fatalf("b's HEAD %q (%v), want refs/heads/main", head, err)
	}
	if !r.isPublished(st) {
		t.Fatal("the pushed state stays held")
	}

	// b's repository is removed: the next push skips it
	if err := r.repos.Delete(ctx, repoB); err != nil {
		t.Fatal(err)
	}
	tip2 := r.commitTo(repoA, "refs/heads/main", "second")
	st2 := a.state(t, "r", tip2)
	r.store.save(t, st2)
	r.logs.Take()
	r.h.OnPush(ctx, pushed(repoA, st2, "", 0, nil))
	if r.repos.Exists(repoB) {
		t.Fatal("a push created a maintainer's repository that is not hosted here")
	}
	if log := r.logs.Take(); strings.Contains(log, "[ERROR]") || strings.Contains(log, "[WARN]") {
		t.Fatalf("a skipped repository was logged as a failure:\n%s", log)
	}
}
