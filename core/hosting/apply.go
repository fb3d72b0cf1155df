package hosting

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// Apply carries out d's effects (relay.Effects): after evt was stored, or at
// once for a rejection that evicts a held announcement or retires a repo.
// A stored deletion (kind 5) is applied to purgatory and to bare repos.
func (h *Hosting) Apply(ctx context.Context, evt *nostr.Event, d policy.Decision) {
	o := h.begin(ctx)
	if d.Outcome == policy.Rejected {
		for _, e := range d.Effects {
			switch e.Kind {
			case policy.EvictHeld:
				o.evict(e.Repo)
			case policy.RemoveRepo:
				o.retire(e.Repo, "announcement no longer lists this server")
			}
		}
		return
	}
	if evt.Kind == nip34.KindDeletion {
		o.deletion(evt)
		return
	}
	if notable(evt.Kind) {
		// A PR's d is empty: its repository is in its a tag.
		repo, _ := nip34.RepoOf(evt)
		o.log.Info(nip34.KindName(evt.Kind)+" accepted", "id", evt.ID, "repo", repo.URLPath(), "author", nip34.Npub(evt.PubKey))
	}
	if evt.Kind == nip34.KindAnnouncement {
		defer o.recheckRejected(evt.Tags.GetD())
	}
	for _, e := range d.Effects {
		switch e.Kind {
		case policy.AlignRepo:
			o.alignToState(evt)
		case policy.BindNostrRef:
			if len(e.OIDs) > 0 {
				o.settlePlaceholders(evt, e.OIDs[0])
				o.bindNostrRef(e.Repo, evt, e.OIDs[0])
			}
		case policy.ReleaseHeld:
			o.release(e.Repo)
		case policy.RemoveRepo:
			o.retire(e.Repo, "announcement no longer lists this server")
		case policy.EvictHeld:
			o.evict(e.Repo)
		}
	}
}
