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
	expired, phs, err := h.purg.Sweep(ctx)
	for _, e := range expired {
		h.log.Info("expired from purgatory without git data", "id", e.Event.ID, "kind", e.Event.Kind, "repo", e.Repo.URLPath())
		if h.hunter != nil {
			h.hunter.ForgetEvent(e.Repo, e.Event.ID)
		}
		if e.Event.Kind == nip34.KindAnnouncement {
			o.retire(e.Repo, "announcement expired from purgatory")
		}
	}
	for _, ph := range phs {
		if err := h.repos.DeleteRef(ctx, ph.Repo, "refs/nostr/"+ph.EventID, ph.Commit); err != nil {
			if !errors.Is(err, git.ErrNotFound) { // an expired /prs/ repository, removed whole
				h.log.Warn("delete expired refs/nostr placeholder", "id", ph.EventID, "error", err)
			}
			continue
		}
		if ph.Repo.PRs && h.removeIfEmptyPRs(ctx, ph.Repo, "placeholder expired") {
			continue
		}
		h.schedulePrune(ctx, ph.Repo)
	}
	h.expirePRs(ctx)
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
			h.log.Warn("git maintenance", "repo", r.URLPath(), "error", err)
		}
	}
	return err
}

// pruneGrace keeps unreachable objects younger than this: the hunter
// fetches objects seconds before the refs that reach them move (release,
// then align), and a prune must not fall in between. Placeholder data is
// removed at the first sweep once both nostr_ref_ttl and pruneGrace have
// passed since it was pushed, whichever is longer.
const pruneGrace = 10 * time.Minute

// schedulePrune puts r on purgatory's durable prune schedule: it lost
// data now.
func (h *Hosting) schedulePrune(ctx context.Context, r nip34.RepoRef) {
	if err := h.purg.SchedulePrune(ctx, r, h.clk.Now()); err != nil {
		h.log.Error("schedule a prune of placeholder data", "repo", r.URLPath(), "error", err)
	}
}

// prune removes from each scheduled repository the objects nothing else
// reaches (audit F02: the data outlived the ref for weeks and stayed
// fetchable). Data lost at some moment arrived before it, so a prune with
// git's cutoff (now − pruneGrace) at or after that moment removes it all: a
// repository stays scheduled until such a prune has run, however short
// nostr_ref_ttl is (F02 follow-up: with a TTL under the grace, the one
// prune at expiry kept everything and the repository was never pruned
// again). A repository borrowed from is left to git's gc.
func (h *Hosting) prune(ctx context.Context) {
	due, err := h.purg.DuePrunes(ctx)
	if err != nil {
		h.log.Error("read the prune schedule", "error", err)
		return
	}
	notAfter := h.clk.Now().Add(-pruneGrace)
	for _, d := range due {
		if ctx.Err() != nil {
			return
		}
		if d.Since.After(notAfter) {
			continue // its objects are still inside the grace
		}
		err := h.repos.Prune(ctx, d.Repo, notAfter)
		switch {
		case errors.Is(err, git.ErrNotFound):
			h.log.Debug("prune schedule: repository gone", "repo", d.Repo.URLPath())
		case errors.Is(err, git.ErrBorrowed):
			h.log.Info("placeholder data kept: the repository's objects are borrowed", "repo", d.Repo.URLPath())
		case err != nil:
			// stays scheduled: the next sweep tries again
			h.log.Warn("prune placeholder data", "repo", d.Repo.URLPath(), "error", err)
			continue
		default:
			h.log.Debug("pruned placeholder data", "repo", d.Repo.URLPath())
		}
		if err := h.purg.Pruned(ctx, d); err != nil {
			h.log.Error("take a repository off the prune schedule", "repo", d.Repo.URLPath(), "error", err)
		}
	}
}
