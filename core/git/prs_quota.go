package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/grasp-dev/grasp/core/nip34"
)

// RemovePRs removes the /prs/ repository repo, refs and all, unless a push
// is writing into it (its data expired unused: core/hosting). It reports
// whether it removed it.
func (r *Repos) RemovePRs(ctx context.Context, repo nip34.RepoRef) (bool, error) {
	return r.removePRs(ctx, repo, false)
}

// removePRs removes a /prs/ repository no push is writing into; onlyEmpty
// keeps one that has a ref.
func (r *Repos) removePRs(ctx context.Context, repo nip34.RepoRef, onlyEmpty bool) (bool, error) {
	if !repo.PRs {
		return false, errors.New("only /prs/ repositories are removed this way")
	}
	dir, err := r.existing(repo)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	unlock, err := r.locks.acquire(ctx, dir)
	if err != nil {
		return false, err
	}
	defer unlock()
	if !isRepoDir(dir) {
		return false, nil // removed by another caller while this one waited
	}
	if onlyEmpty {
		refs, err := r.refsAt(ctx, dir)
		if err != nil || len(refs) > 0 {
			return false, err
		}
	}
	r.prs.mu.Lock()
	defer r.prs.mu.Unlock()
	if r.prs.n[dir] > 0 {
		return false, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, fmt.Errorf("remove %s: %w", repo.URLPath(), err)
	}
	_ = os.Remove(filepath.Dir(dir)) // the npub directory, when it was the last
	r.log.Debug("removed a /prs/ repository", "repo", repo.URLPath(), "only_empty", onlyEmpty)
	return true, nil
}

// DiskBytes is what the files of repo take (their sizes).
func (r *Repos) DiskBytes(repo nip34.RepoRef) (int64, error) {
	dir, err := r.existing(repo)
	if err != nil {
		return 0, err
	}
	var n int64
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n, err
}
