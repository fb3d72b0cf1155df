package hosting

import (
	"context"

	"github.com/grasp-dev/grasp/core/git"
)

// OnPush is git.Hooks: after a successful receive-pack, record git-first PR
// refs, bring the other maintainers' repos here to the same state (G01-G4)
// and release what the new data makes servable in each.
func (h *Hosting) OnPush(ctx context.Context, res git.PushResult) {
	o := h.begin(ctx)
	for _, ph := range res.Placeholders {
		if err := h.purg.AddPlaceholder(res.Repo, ph.EventID, ph.Tip); err != nil {
			h.log.Error("record refs/nostr placeholder", "id", ph.EventID, "error", err)
		}
	}
	state := ""
	if res.State != nil {
		state = res.State.EventID
	}
	h.log.Info("push accepted", "repo", res.Repo.String(), "state", state, "placeholders", len(res.Placeholders))
	owners := []string{res.Repo.Pubkey}
	if res.State != nil {
		owners = o.view(res.Repo.Identifier).owners(res.State.Author)
		o.propagate(res.Repo, res.State.Refs, res.State.HEAD, owners)
	}
	o.release(res.Repo)
	for _, owner := range owners {
		if owner != res.Repo.Pubkey {
			o.release(ref(owner, res.Repo.Identifier))
		}
	}
}
