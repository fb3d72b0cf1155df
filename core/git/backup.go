package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// EachLocked calls fn with the directories of the repositories of each
// identifier while it holds all their locks (taken in sorted order, as
// Delete does), so fn reads every repository between two pushes, ref
// edits or repacks (`grasp admin backup`, core/admin). One identifier's
// repositories are taken together because they borrow each other's objects
// through alternates: a borrower's refs read alone could name an object
// its lender gets only later. A repository deleted since the listing is
// left out of dirs.
func (r *Repos) EachLocked(ctx context.Context, fn func(dirs []string) error) error {
	repos, err := r.List(ctx)
	if err != nil {
		return err
	}
	groups := map[string][]string{}
	var ids []string
	for _, repo := range repos {
		dir, err := r.Path(repo)
		if err != nil {
			continue
		}
		if groups[repo.Identifier] == nil {
			ids = append(ids, repo.Identifier)
		}
		groups[repo.Identifier] = append(groups[repo.Identifier], dir)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := r.withLocks(ctx, groups[id], fn); err != nil {
			return err
		}
	}
	return nil
}

func (r *Repos) withLocks(ctx context.Context, dirs []string, fn func(dirs []string) error) error {
	sort.Strings(dirs)
	for _, d := range dirs {
		unlock, err := r.locks.acquire(ctx, d)
		if err != nil {
			return err
		}
		defer unlock()
	}
	live := dirs[:0:0]
	for _, d := range dirs {
		if isRepoDir(d) {
			live = append(live, d)
		}
	}
	return fn(live)
}

// BackupSkips reports whether a file of a repository, rel to its
// directory, is left out of a copy: a push's quarantine (objects/incoming-*,
// still unchecked and removed by git when the push ends) and lock files,
// which in a copy would make git refuse to update the ref they guard.
func BackupSkips(rel string) bool {
	rel = filepath.ToSlash(rel)
	if strings.HasPrefix(rel, "objects/incoming-") || strings.HasPrefix(rel, "objects/tmp_objdir") {
		return true
	}
	return strings.HasSuffix(rel, ".lock")
}

// RebaseAlternates rewrites, in every repository under root, the
// alternates that name a repository under oldRoot to name the same
// repository under root: they hold absolute paths, and a restored data
// dir may live elsewhere than the one backed up.
func RebaseAlternates(root, oldRoot string) error {
	oldRoot, root = filepath.Clean(oldRoot), filepath.Clean(root)
	if oldRoot == root {
		return nil
	}
	owners, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("list owners: %w", err)
	}
	for _, o := range owners {
		if !o.IsDir() || !strings.HasPrefix(o.Name(), "npub1") {
			continue
		}
		entries, _ := os.ReadDir(filepath.Join(root, o.Name()))
		for _, e := range entries {
			dir := filepath.Join(root, o.Name(), e.Name())
			if !strings.HasSuffix(e.Name(), ".git") || !isRepoDir(dir) {
				continue
			}
			err := editAlternates(dir, func(lines []string) []string {
				out := make([]string, 0, len(lines))
				for _, l := range lines {
					if rest, ok := strings.CutPrefix(filepath.Clean(l), oldRoot+string(filepath.Separator)); ok {
						l = filepath.Join(root, rest)
					}
					out = append(out, l)
				}
				return out
			})
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
