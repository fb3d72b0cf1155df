package hosting

import (
	"context"

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
		}
	}
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
