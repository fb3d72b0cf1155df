package git

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestRead_BoundedAndReadOnly: Read runs only read commands, refuses
// --output, and cuts output at MaxBytes with ErrReadTruncated.
func TestRead_BoundedAndReadOnly(t *testing.T) {
	repos, err := NewRepos(RepoOptions{Root: t.TempDir()}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	repo := nip34.RepoRef{Pubkey: strings.Repeat("ab", 32), Identifier: "r"}
	ctx := context.Background()
	if err := repos.Create(ctx, repo); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"update-ref", "refs/heads/x", "HEAD"}, {"gc"}, {"diff-tree", "--output=/tmp/x", "HEAD"}, {}} {
		if _, err := repos.Read(ctx, repo, ReadLimits{}, nil, args...); err == nil || !strings.HasPrefix(err.Error(), "invalid:") {
			t.Errorf("Read %q: %v, want an invalid: error", args, err)
		}
	}
	out, err := repos.Read(ctx, repo, ReadLimits{}, nil, "rev-parse", "--git-dir")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "r.git") {
		t.Fatalf("rev-parse: %q %v", out, err)
	}
	out, err = repos.Read(ctx, repo, ReadLimits{MaxBytes: 5}, nil, "rev-parse", "--git-dir")
	if !errors.Is(err, ErrReadTruncated) || len(out) != 5 {
		t.Fatalf("bounded read: %q %v, want 5 bytes and ErrReadTruncated", out, err)
	}
}

// TestRefsStamp_ChangesWithRefsAndHead: the stamp pages cache by stays
// while nothing changes and moves with every ref or HEAD change.
func TestRefsStamp_ChangesWithRefsAndHead(t *testing.T) {
	ts := newTestStore(t)
	owner, _ := ts.newRepo("s")
	hex, _ := DecodeNpub(owner)
	repo := nip34.RepoRef{Pubkey: hex, Identifier: "s"}
	ctx := context.Background()
	stamp := func() string {
		t.Helper()
		s, err := ts.repos.RefsStamp(repo)
		if err != nil || s == "" {
			t.Fatalf("RefsStamp: %q %v", s, err)
		}
		return s
	}
	s0 := stamp()
	if stamp() != s0 {
		t.Fatal("stamp changed without a change")
	}
	dir, _ := ts.repos.Path(repo)
	tree := testkit.Git(t, "", "--git-dir="+dir, "mktree")
	commit := func(msg string) string {
		return testkit.Git(t, "", "--git-dir="+dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", tree, "-m", msg)
	}
	seen := map[string]string{s0: "start"}
	step := func(what string) {
		t.Helper()
		s := stamp()
		if prev, dup := seen[s]; dup {
			t.Fatalf("%s: stamp equals the one after %s", what, prev)
		}
		seen[s] = what
	}
	if err := ts.repos.Align(ctx, repo, map[string]string{"refs/heads/main": commit("one")}, "refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	step("first branch")
	if err := ts.repos.Align(ctx, repo, map[string]string{"refs/heads/main": commit("two")}, "refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	step("branch moved")
	testkit.Git(t, "", "--git-dir="+dir, "pack-refs", "--all")
	step("refs packed")
	if err := ts.repos.Align(ctx, repo, map[string]string{"refs/heads/main": commit("two"), "refs/heads/dev": commit("three")}, "refs/heads/dev"); err != nil {
		t.Fatal(err)
	}
	step("HEAD and a new branch")
}
