package nip34

import (
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// CurrentStatus is the status kind (1630 open, 1631 applied/merged/resolved,
// 1632 closed, 1633 draft) of a patch, PR or issue rootID written by
// rootAuthor: NIP-34 takes the latest status (Later) whose author is the
// root's author or a maintainer of the repository; moderators may publish
// statuses too (maintainers-v3.md §1). Statuses by anyone else, or about
// other events, are ignored. With none, the root is open.
func CurrentStatus(rootID, rootAuthor string, r Roster, statuses []*nostr.Event) int {
	var best *nostr.Event
	for _, evt := range statuses {
		if !r.Speaks(evt.PubKey, rootAuthor) {
			continue
		}
		st, err := ParseStatus(evt)
		if err != nil || !slices.Contains(st.Roots, rootID) {
			continue
		}
		if best == nil || LaterEvent(evt, best) {
			best = evt
		}
	}
	if best == nil {
		return KindStatusOpen
	}
	return best.Kind
}
