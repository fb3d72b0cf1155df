package hosting

import (
	"context"
	"errors"
	"time"

	"github.com/grasp-dev/grasp/core/git"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Sweep expires held events and placeholders (a scheduled loop): an expired
// announcement's empty bare repo is removed (G01-P5), an expired
// placeholder ref deleted (G01-G5f).
func (h *Hosting) Sweep(ctx context.Context) error {
	o := h.begin(ctx)
	expired, phs, err := h.purg.Sweep()
	for _, e := range expired {
		h.log.Info("expired from purgatory without git data", "id", e.Event.ID, "kind", e.Event.Kind)
		if h.hunter != nil {
			h.hunter.ForgetEvent(e.Repo, e.Event.ID)
		}
		if e.Event.Kind == nip34.KindAnnouncement {
			o.retire(e.Repo, "announcement expired from purgatory")
		}
	}
	for _, ph := range phs {
		if err := h.repos.DeleteRef(ctx, ph.Repo, "refs/nostr/"+ph.EventID, ph.Commit); err != nil {
			h.log.Warn("delete expired refs/nostr placeholder", "id", ph.EventID, "error", err)
			continue
		}
		if ph.Repo.PRs {
			h.removeIfEmptyPRs(ctx, ph.Repo, "placeholder expired")
			continue
		}
		h.schedulePrune(ph.Repo)
	}
	h.prune(ctx)
	return err
}

// Maintain runs git's own housekeeping (gc --auto) on every hosted
// repository (a scheduled loop: pushes run with receive.autogc off).
func (h *Hosting) Maintain(ctx context.Context) error {
	repos, err := h.repos.List(ctx)
	for _, r := range repos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := h.repos.Maintain(ctx, r); err != nil {
			h.log.Warn("git maintenance", "repo", r.String(), "error", err)
		}
	}
	return err
}

// pruneGrace keeps unreachable objects younger than this: the hunter
// fetches objects seconds before the refs that reach them move (release,
// then align), and a prune must not fall in between. Placeholder data is
// removed at the first sweep after nostr_ref_ttl + pruneGrace.
const pruneGrace = 10 * time.Minute

func (h *Hosting) schedulePrune(r nip34.RepoRef) {
	h.pruneMu.Lock()
	h.toPrune[r] = true
	h.pruneMu.Unlock()
}

// prune removes from each repository that lost placeholder refs the objects
// nothing else reaches (audit F02: the data outlived the ref for weeks and
// stayed fetchable). A repository borrowed from is left to git's gc.
func (h *Hosting) prune(ctx context.Context) {
	h.pruneMu.Lock()
	repos := h.toPrune
	h.toPrune = map[nip34.RepoRef]bool{}
	h.pruneMu.Unlock()
	notAfter := h.clk.Now().Add(-pruneGrace)
	for r := range repos {
		if ctx.Err() != nil {
			h.schedulePrune(r)
			continue
		}
		err := h.repos.Prune(ctx, r, notAfter)
		switch {
		case errors.Is(err, git.ErrBorrowed):
			h.log.Info("placeholder data kept: the repository's objects are borrowed", "repo", r.String())
		case err != nil:
			h.log.Warn("prune placeholder data", "repo", r.String(), "error", err)
		default:
			h.log.Debug("pruned placeholder data", "repo", r.String())
		}
	}
}
