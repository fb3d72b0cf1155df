package git

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// ErrBorrowed is Prune's answer for a repository whose objects other
// repositories borrow (alternates): dropping what its own refs do not reach
// could take objects a borrower's refs need (audit F01), so nothing is
// pruned there and git's own gc (with pruning off while borrowed) is left
// to it.
var ErrBorrowed = errors.New("objects are borrowed by another repository")

// Prune removes from repo's object store every object no ref reaches that
// arrived before notAfter, packed or loose: what an expired refs/nostr
// placeholder pushed stays on disk and stays fetchable by id over protocol
// v2 until it is pruned (audit 2026-11, F02: 58 MB before its ref expired,
// 64 MB after). It runs under the repository's lock, so no push or fetch
// into it is between its objects and its refs. Objects newer than notAfter
// are kept: the hunter fetches objects before the refs that will reach
// them move. It rewrites the repository's packs (a cruft repack), so
// callers batch it per repository.
func (r *Repos) Prune(ctx context.Context, repo nip34.RepoRef, notAfter time.Time) error {
	dir, err := r.existing(repo)
	if err != nil {
		return err
	}
	deps, err := r.dependents(repo.Identifier, filepath.Join(dir, "objects"))
	if err != nil {
		return fmt.Errorf("prune %s: %w", dir, err)
	}
	if len(deps) > 0 {
		return fmt.Errorf("prune %s: %w (%d)", dir, ErrBorrowed, len(deps))
	}
	unlock, err := r.lock(ctx, dir)
	if err != nil {
		return err
	}
	defer unlock()
	expire := "@" + strconv.FormatInt(notAfter.Unix(), 10)
	// -l: objects borrowed from alternates stay where they are.
	if _, err := r.run(ctx, dir, nil, "-c", "pack.threads=1", "-c", "pack.windowMemory=100m", "repack", "-a", "-d", "-l", "-q",
		"--cruft", "--cruft-expiration="+expire); err != nil {
		return fmt.Errorf("prune %s: %w", dir, err)
	}
	if _, err := r.run(ctx, dir, nil, "prune", "--expire="+expire); err != nil {
		return fmt.Errorf("prune %s: %w", dir, err)
	}
	return nil
}
