package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// GRASP-06 repositories on disk (core/githttp serves them at
// /prs/<signer npub>/<percent-encoded d>.git). They live under
// <root>/prs/, which is not an npub: List, maintenance, the integrity check
// and alternates never see them. Reads of a path without a repository are
// served from one shared empty repository (EmptyDir), so reading never
// creates a directory; a repository is created for a push that has been
// authorised and admitted (OpenPRs), and removed again whenever it is left
// without a ref (G06-8) or its data expires unused (RemovePRs,
// core/hosting).

// prsDirName is where GRASP-06 repositories live under the root.
const prsDirName = "prs"

// emptyDirName is the empty repository /prs/ reads of a path without a
// repository are served from. It is never written after start-up.
const emptyDirName = ".grasp-empty.git"

// installEmpty makes the shared empty repository (once) and returns its
// directory.
func installEmpty(root string) (string, error) {
	dir := filepath.Join(root, emptyDirName)
	if isRepoDir(dir) {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(root, ".init-empty-*")
	if err != nil {
		return "", fmt.Errorf("create the empty repository: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := initBare(tmp); err != nil {
		return "", fmt.Errorf("create the empty repository: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !isRepoDir(dir) {
		return "", fmt.Errorf("create the empty repository: %w", err)
	}
	return dir, nil
}

// EmptyDir is the empty repository /prs/ reads of a path without a
// repository are served from (never written after start-up).
func (r *Repos) EmptyDir() string { return r.empty }

// prsBusy counts the pushes in progress per /prs/ repository directory: a
// repository a push is writing into is never removed for having no ref.
type prsBusy struct {
	mu sync.Mutex
	n  map[string]int
}

// OpenPRs creates the /prs/ repository repo if needed for a push that has
// been authorised and admitted, and marks it busy until done is called;
// done removes it again if the push left it without a ref (G06-8).
func (r *Repos) OpenPRs(ctx context.Context, repo nip34.RepoRef) (done func(), err error) {
	if !repo.PRs {
		return nil, errors.New("OpenPRs: not a /prs/ repository")
	}
	dir, err := r.Path(repo)
	if err != nil {
		return nil, err
	}
	r.prs.mu.Lock()
	r.prs.n[dir]++
	err = r.Create(ctx, repo)
	r.prs.mu.Unlock()
	var once sync.Once
	done = func() {
		once.Do(func() {
			r.prs.mu.Lock()
			if r.prs.n[dir]--; r.prs.n[dir] <= 0 {
				delete(r.prs.n, dir)
			}
			r.prs.mu.Unlock()
			if _, err := r.RemoveIfEmpty(context.WithoutCancel(ctx), repo); err != nil {
				r.log.Warn("remove a /prs/ repository left without refs", "repo", repo.URLPath(), "error", err)
			}
		})
	}
	if err != nil {
		done()
		return nil, err
	}
	return done, nil
}

// RemoveIfEmpty removes the /prs/ repository repo when it has no ref and no
// push is writing into it (G06-8: at the end of a push, after a mismatch or
// an expiry, and by the start-up scan). It reports whether it removed it.
func (r *Repos) RemoveIfEmpty(ctx context.Context, repo nip34.RepoRef) (bool, error) {
	return r.removePRs(ctx, repo, true)
}

// ListPRs returns every /prs/ repository on disk (the start-up scan).
func (r *Repos) ListPRs(ctx context.Context) ([]nip34.RepoRef, error) {
	out, err := r.walk(ctx, filepath.Join(r.root, prsDirName), nip34.PRsRepo)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil && !errors.Is(err, ctx.Err()):
		return nil, fmt.Errorf("list /prs/ owners: %w", err)
	}
	return out, err
}

// CopyRef copies ref at oid from one repository into another (G06-7: a PR
// released through /prs/ is mirrored into the owner's repository here):
// the objects are fetched locally, never borrowed (the /prs/ repository
// holds a stranger's data), then the ref is set. A ref already at oid is
// left alone.
func (r *Repos) CopyRef(ctx context.Context, from, to nip34.RepoRef, ref, oid string) error {
	if err := CheckRefName(ref); err != nil {
		return err
	}
	if !nip34.IsObjectID(oid) || IsZeroOID(oid) {
		return outcome.Errorf(outcome.Invalid, "%q is not an object id", Clip(oid, 80))
	}
	src, err := r.existing(from)
	if err != nil {
		return err
	}
	dst, err := r.existing(to)
	if err != nil {
		return err
	}
	unlock, err := r.locks.acquire(ctx, dst)
	if err != nil {
		return err
	}
	defer unlock()
	if refs, err := r.refsAt(ctx, dst); err == nil && refs[ref] == oid {
		return nil
	}
	if _, err := r.run(ctx, dst, nil, "-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", src, oid); err != nil {
		return fmt.Errorf("copy %s into %s: %w", ref, to.URLPath(), err)
	}
	if _, err := r.run(ctx, dst, strings.NewReader("update "+ref+" "+oid+"\n"), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("set %s in %s: %w", ref, to.URLPath(), err)
	}
	return nil
}
