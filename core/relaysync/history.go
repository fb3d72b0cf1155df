package relaysync

import (
	"context"
	"fmt"

	"github.com/fiatjaf/eventstore"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/nbd-wtf/go-nostr"
)

// historyPage is how many events one start-up history query reads.
const historyPage = 2000

// syncKinds are what the self-subscriber follows: announcements and the
// root events layer 3 tracks.
func syncKinds() []int { return append([]int{nip34.KindAnnouncement}, nip34.RootKinds()...) }

// outboxKinds are what GRASP-03 learns participants and their relays from,
// besides root events: NIP-65 lists and the replies to root events (NIP-22
// comments, NIP-10 notes, NIP-34 statuses).
var outboxKinds = []int{KindRelayList, 1111, 1, 1630, 1631, 1632, 1633}

// replayHistory streams every stored event of kinds to observe,
// newest first, in pages walked by until. A negentropy-marked query lifts
// the REQ cap (the store caps it at its negentropy maximum instead); a page
// that is all one second is read whole, then the walk continues below it.
func replayHistory(ctx context.Context, events Events, kinds []int, observe func(*nostr.Event)) error {
	var until *nostr.Timestamp
	for {
		n, oldest, newest, err := queryInto(ctx, events, nostr.Filter{Kinds: kinds, Until: until, Limit: historyPage}, observe)
		if err != nil {
			return err
		}
		if n < historyPage {
			return nil
		}
		if oldest == newest {
			sec := oldest
			if _, _, _, err := queryInto(ctx, events, nostr.Filter{Kinds: kinds, Since: &sec, Until: &sec}, observe); err != nil {
				return err
			}
			if oldest == 0 {
				return nil
			}
			oldest--
		}
		// The page's oldest second is read again from the top: events share
		// it beyond the page, and observing one twice changes nothing.
		u := oldest
		until = &u
	}
}

// queryInto reads what f matches without contents: sync reads ids, authors,
// kinds and tags only, and a start-up replay reads every root event and
// reply in the store (store.WithoutContent).
func queryInto(ctx context.Context, events Events, f nostr.Filter, observe func(*nostr.Event)) (n int, oldest, newest nostr.Timestamp, err error) {
	ch, err := events.QueryEvents(store.WithoutContent(eventstore.SetNegentropy(ctx)), f)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("query stored events for sync: %w", err)
	}
	for {
		select {
		case evt, ok := <-ch:
			if !ok {
				return n, oldest, newest, nil
			}
			if n == 0 || evt.CreatedAt < oldest {
				oldest = evt.CreatedAt
			}
			if evt.CreatedAt > newest {
				newest = evt.CreatedAt
			}
			n++
			observe(evt)
		case <-ctx.Done():
			return n, oldest, newest, fmt.Errorf("query stored events for sync: %w", ctx.Err())
		}
	}
}
