package catchup

import (
	"context"
	"fmt"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

// Querier is the query half of an eventstore.Store.
type Querier interface {
	QueryEvents(ctx context.Context, filter nostr.Filter) (chan *nostr.Event, error)
}

// StoreLocal is a Local over an event store. It marks its queries as
// negentropy queries (eventstore.SetNegentropy) so badger and lmdb do not cut
// the set to MaxLimit/4; stores that cap regardless (slicestore's MaxLimit,
// sqlite3 and postgresql's QueryLimit) must be configured large enough.
type StoreLocal struct {
	Store Querier
}

func (l StoreLocal) Items(ctx context.Context, filter nostr.Filter) ([]Item, error) {
	ch, err := l.Store.QueryEvents(eventstore.SetNegentropy(ctx), filter)
	if err != nil {
		return nil, fmt.Errorf("query local store: %w", err)
	}
	var items []Item
	for {
		select {
		case evt, ok := <-ch:
			if !ok {
				return items, nil
			}
			items = append(items, Item{ID: evt.ID, CreatedAt: evt.CreatedAt})
		case <-ctx.Done():
			// Stores stop sending when ctx ends, without closing the channel.
			return nil, fmt.Errorf("query local store: %w", ctx.Err())
		}
	}
}
