package git

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// TestEachLockedHoldsRefWritesBack: EachLocked hands over the repositories
// of one identifier together (they borrow each other's objects) and a ref
// write to one of them waits until fn returns, so a backup reads each
// repository between two writes.
func TestEachLockedHoldsRefWritesBack(t *testing.T) {
	ctx := context.Background()
	repos, err := NewRepos(RepoOptions{Root: filepath.Join(t.TempDir(), "git")}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := randomNpub(t), randomNpub(t)
	for _, r := range []struct{ owner, id string }{{a, "p"}, {b, "p"}, {a, "q"}} {
		if err := repos.Create(ctx, ref(r.owner, r.id)); err != nil {
			t.Fatal(err)
		}
	}
	work := testkit.GitWork(t)
	tip := testkit.Git(t, work, "rev-parse", "HEAD")
	ap, _ := repos.Path(ref(a, "p"))
	bp, _ := repos.Path(ref(b, "p"))
	aq, _ := repos.Path(ref(a, "q"))
	testkit.Git(t, work, "push", "-q", ap, "main")

	var groups [][]string
	wrote := make(chan error, 1)
	err = repos.EachLocked(ctx, func(dirs []string) error {
		groups = append(groups, append([]string(nil), dirs...))
		if len(groups) != 1 {
			return nil
		}
		go func() { wrote <- repos.SetRef(ctx, ref(a, "p"), "refs/heads/during", tip, "") }()
		testwait.For(t, "the ref write to wait for the lock", func() bool {
			repos.locks.mu.Lock()
			defer repos.locks.mu.Unlock()
			lk := repos.locks.locks[ap]
			return lk != nil && lk.refs == 2
		})
		if _, err := os.Stat(filepath.Join(ap, "refs", "heads", "during")); !os.IsNotExist(err) {
			t.Errorf("the ref was written while the repository was held: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{sortedPair(ap, bp), {aq}}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("groups = %v, want %v", groups, want)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the ref write after the lock was released: %v", err)
	}
	if refs, _ := repos.Refs(ctx, ref(a, "p")); refs["refs/heads/during"] != tip {
		t.Errorf("refs after release = %v", refs)
	}
}

func sortedPair(x, y string) []string {
	if y < x {
		x, y = y, x
	}
	return []string{x, y}
}

func TestBackupSkips(t *testing.T) {
	for rel, want := range map[string]bool{
		"objects/incoming-AbC123":           true,
		"objects/incoming-AbC123/pack/x":    true,
		"objects/tmp_objdir-incoming-x":     true,
		"refs/heads/main.lock":              true,
		"packed-refs.lock":                  true,
		"objects/pack/pack-1.pack":          false,
		"refs/heads/main":                   false,
		"packed-refs":                       false,
		"objects/info/alternates":           false,
		"objects/ab/cdef0123456789abcdef01": false,
	} {
		if got := BackupSkips(rel); got != want {
			t.Errorf("BackupSkips(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestRebaseAlternates: alternates naming a repository under the old root
// name the same repository under the new one; others are left alone.
func TestRebaseAlternates(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "git")
	repos, err := NewRepos(RepoOptions{Root: root}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	owner := randomNpub(t)
	if err := repos.Create(ctx, ref(owner, "p")); err != nil {
		t.Fatal(err)
	}
	dir, _ := repos.Path(ref(owner, "p"))
	lender := randomNpub(t)
	old := "/var/lib/grasp/git"
	lines := []string{old + "/" + lender + "/p.git/objects", "/elsewhere/objects"}
	if err := editAlternates(dir, func([]string) []string { return lines }); err != nil {
		t.Fatal(err)
	}
	if err := RebaseAlternates(root, old); err != nil {
		t.Fatal(err)
	}
	got, err := readAlternates(dir)
	want := []string{filepath.Join(root, lender, "p.git", "objects"), "/elsewhere/objects"}
	if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("alternates = %q, %v; want %q", got, err, want)
	}
}
