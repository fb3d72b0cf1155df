package git

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testkit"
)

func TestNpubRoundTripAndValidation(t *testing.T) {
	hexKey := "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d"
	npub, err := EncodeNpub(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	// The well-known npub of this key (NIP-19 test vector).
	if npub != "npub180cvv07tjdrrgpa0j7j7tmnyl2yr6yr7l8j4s3evf6u64th6gkwsyjh6w6" {
		t.Fatalf("npub = %s", npub)
	}
	back, err := DecodeNpub(npub)
	if err != nil || back != hexKey {
		t.Fatalf("decode = %s, %v", back, err)
	}
	for _, bad := range []string{"", "npub1", strings.ToUpper(npub), npub[:len(npub)-1] + "q", "nsec" + npub[4:], npub + "qq", "npub1" + strings.Repeat("b", 200)} {
		if _, err := DecodeNpub(bad); err == nil || !strings.HasPrefix(err.Error(), "invalid:") {
			t.Errorf("DecodeNpub(%q) err = %v", bad, err)
		}
	}
}

func TestReposLifecycle(t *testing.T) {
	ctx := context.Background()
	repos, err := NewRepos(RepoOptions{Root: filepath.Join(t.TempDir(), "git")}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	owner := randomNpub(t)
	if repos.Exists(ref(owner, "p")) {
		t.Fatal("exists before create")
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := repos.Create(ctx, ref(owner, "p")); err != nil {
			t.Fatal(err)
		}
	}
	if !repos.Exists(ref(owner, "p")) {
		t.Fatal("not created")
	}
	if _, err := repos.Refs(ctx, ref(owner, "missing")); err == nil || !strings.Contains(err.Error(), ErrNotFound.Error()) {
		t.Fatalf("refs of a missing repo: %v", err)
	}

	// Bring objects in: push from a work repo straight into the bare repo.
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	y := testkit.GitCommit(t, work, "y")
	dir, _ := repos.Path(ref(owner, "p"))
	testkit.Git(t, work, "push", "-q", dir, "main", "main:refs/heads/old", "main:refs/nostr/"+strings.Repeat("a", 64))

	has, err := repos.HasObjects(ctx, ref(owner, "p"), []string{x, y, strings.Repeat("9", 40)})
	if err != nil || !has[x] || !has[y] || has[strings.Repeat("9", 40)] {
		t.Fatalf("HasObjects = %v, %v", has, err)
	}
	if _, err := repos.HasObjects(ctx, ref(owner, "p"), []string{"HEAD~1"}); err == nil {
		t.Fatal("HasObjects accepted a revision expression")
	}

	// Align: move main back, add dev, drop old, keep refs/nostr, set HEAD.
	err = repos.Align(ctx, ref(owner, "p"), map[string]string{"refs/heads/main": x, "refs/heads/dev": y, "refs/tags/v1^{}": y}, "ref: refs/heads/dev")
	if err != nil {
		t.Fatal(err)
	}
	refs, _ := repos.Refs(ctx, ref(owner, "p"))
	if refs["refs/heads/main"] != x || refs["refs/heads/dev"] != y || refs["refs/heads/old"] != "" || refs["refs/nostr/"+strings.Repeat("a", 64)] != y || len(refs) != 3 {
		t.Fatalf("refs after align = %v", refs)
	}
	if head, _ := repos.Head(ctx, ref(owner, "p")); head != "refs/heads/dev" {
		t.Fatalf("HEAD = %s", head)
	}

	// A state naming a missing object changes nothing (atomic transaction).
	err = repos.Align(ctx, ref(owner, "p"), map[string]string{"refs/heads/main": y, "refs/heads/new": strings.Repeat("9", 40)}, "")
	if err == nil {
		t.Fatal("align with a missing object succeeded")
	}
	after, _ := repos.Refs(ctx, ref(owner, "p"))
	if after["refs/heads/main"] != x || after["refs/heads/new"] != "" {
		t.Fatalf("failed align changed refs: %v", after)
	}
	pr := "refs/nostr/" + strings.Repeat("b", 64)
	if err := repos.SetRef(ctx, ref(owner, "p"), pr, x, ZeroOID); err != nil {
		t.Fatal(err)
	}
	if err := repos.SetRef(ctx, ref(owner, "p"), pr, y, ZeroOID); err == nil {
		t.Fatal("SetRef overwrote a ref that was expected not to exist")
	}
	if err := repos.DeleteRef(ctx, ref(owner, "p"), pr, y); err == nil {
		t.Fatal("DeleteRef with a wrong old value succeeded")
	}
	if err := repos.DeleteRef(ctx, ref(owner, "p"), pr, x); err != nil {
		t.Fatal(err)
	}
	if err := repos.DeleteRef(ctx, ref(owner, "p"), pr, ""); err != nil {
		t.Fatalf("deleting a missing ref: %v", err)
	}
	if err := repos.SetRef(ctx, ref(owner, "p"), "refs/heads/a..b", x, ""); err == nil {
		t.Fatal("SetRef accepted a bad ref name")
	}
	if refs, _ := repos.Refs(ctx, ref(owner, "p")); refs[pr] != "" {
		t.Fatalf("ref survived deletion: %v", refs)
	}
	if err := repos.SetHead(ctx, ref(owner, "p"), "refs/tags/v1"); err == nil || !strings.HasPrefix(err.Error(), "invalid:") {
		t.Fatalf("HEAD on a tag: %v", err)
	}
	if err := repos.Maintain(ctx, ref(owner, "p")); err != nil {
		t.Fatal(err)
	}
	if err := repos.Delete(ctx, ref(owner, "p")); err != nil || repos.Exists(ref(owner, "p")) {
		t.Fatalf("delete: %v", err)
	}
}
