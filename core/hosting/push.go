package hosting

import (
	"context"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// ReservePlaceholders is githttp.PlaceholderQuota: purgatory counts
// placeholders, waiting and in flight.
func (h *Hosting) ReservePlaceholders(repo nip34.RepoRef, ip string, ids []string) (githttp.PlaceholderReservation, error) {
	rv, err := h.purg.ReservePlaceholders(repo, ip, ids)
	if err != nil {
		return nil, err
	}
	return rv, nil
}

// OnPush is githttp.Hooks: after a successful receive-pack, record git-first PR
// refs, bring the other maintainers' repos here to the same state (G01-G4)
// and release what the new data makes servable in each.
func (h *Hosting) OnPush(ctx context.Context, res githttp.PushResult) {
	o := h.begin(ctx)
	for i, ph := range res.Placeholders {
		// The push's bytes are shared among its placeholders (what quotas
		// count; the pack is one).
		share := res.PlaceholderBytes / int64(len(res.Placeholders))
		if i == 0 {
			share += res.PlaceholderBytes % int64(len(res.Placeholders))
		}
		if err := h.purg.AddPlaceholder(ctx, purgatory.Placeholder{
			Repo: res.Repo, EventID: ph.EventID, Commit: ph.Tip, Remote: res.Remote, Bytes: share,
		}); err != nil {
			h.log.Error("record refs/nostr placeholder", "id", ph.EventID, "error", err)
		}
	}
	state := ""
	if res.State != nil {
		state = res.State.EventID
	}
	h.log.Info("push accepted", "repo", res.Repo.URLPath(), "remote", res.Remote, "refs", git.RefsMoved(res.Updates), "state", state, "placeholders", len(res.Placeholders))
	owners := []string{res.Repo.Pubkey}
	if res.State != nil {
		v := o.view(res.Repo.Identifier)
		owners = v.owners(res.State.Author)
		o.propagate(res.Repo, res.State.Refs, res.State.HEAD, v.following(owners, res.State.CreatedAt, res.State.EventID))
	}
	o.release(res.Repo)
	for _, owner := range owners {
		if owner != res.Repo.Pubkey {
			o.release(ref(owner, res.Repo.Identifier))
		}
	}
}
