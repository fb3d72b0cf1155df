package git

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/grasp-dev/grasp/core/nip34"
)

// PRsQuota bounds what GRASP-06 /prs/ repositories hold on disk (audit
// 2026-11b, F20): every push into one is counted, whether or not its PR
// event is known, per client address, per npub of the path and in total,
// before git runs and as its bytes arrive; what an applied push brought
// stays counted until the repository is removed.
type PRsQuota interface {
	// ReservePRs admits a push from ip into the /prs/ repository repo
	// before git runs; expect is a lower bound of its size (the request's
	// Content-Length, 0 when unknown). An error's text is what the client
	// sees.
	ReservePRs(repo nip34.RepoRef, ip string, expect int64) (PRsReservation, error)
}

// PRsReservation is a /prs/ push in progress.
type PRsReservation interface {
	// Charge counts n more bytes of the push; an error stops the push (its
	// text is what the client sees).
	Charge(n int64) error
	// Commit keeps what the applied push brought counted.
	Commit(ctx context.Context) error
	// Release ends the reservation (idempotent): what was not committed is
	// given back.
	Release()
}

// reservePRs reserves a /prs/ push of r's size (at least) with the
// handler's PRsQuota; nil and no error when there is none.
func (h *handler) reservePRs(r *http.Request, repo nip34.RepoRef, ip string) (PRsReservation, error) {
	if !repo.PRs || h.opts.PRsQuota == nil {
		return nil, nil
	}
	return h.opts.PRsQuota.ReservePRs(repo, ip, max(r.ContentLength, 0))
}

// chargeAll is one limitReader.charge for several reservations: the first
// refusal stops the body.
func chargeAll(charges []func(int64) error) func(int64) error {
	if len(charges) == 0 {
		return nil
	}
	return func(n int64) error {
		for _, c := range charges {
			if err := c(n); err != nil {
				return err
			}
		}
		return nil
	}
}

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
