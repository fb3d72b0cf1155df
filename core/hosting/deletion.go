package hosting

import (
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// deletion removes the held entries a stored NIP-09 request by their author
// names; an announcement removed that way also loses its empty bare repo.
// (The store already dropped what it holds; sync follows both.)
func (o *op) deletion(del *nostr.Event) {
	var ids, addrs []string
	for _, t := range del.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "e":
			ids = append(ids, t[1])
		case "a":
			addrs = append(addrs, t[1])
		}
	}
	removed, err := o.purg.DeleteRequested(o.ctx, del.PubKey, ids, addrs, del.CreatedAt.Time())
	if err != nil {
		o.log.Error("apply deletion to purgatory", "id", del.ID, "error", err)
	}
	for _, e := range removed {
		if e.Event.Kind == nip34.KindAnnouncement {
			o.retire(e.Repo, "announcement deleted by its author")
		}
	}
}
