package catchup

import (
	"context"
	"fmt"
	"math"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
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

// SetLocal is a Local that can also hand over the set of a filter as the
// negentropy storage a session reconciles from, without listing it: ok is
// false when it cannot for this filter (Items is then used).
type SetLocal interface {
	Local
	Set(ctx context.Context, filter nostr.Filter) (st negentropy.Storage, ok bool, err error)
}

// indexed is a store that hands over the (created_at, id) pairs of the
// events a filter matches without decoding them (core/store: badger keeps
// them in memory, core/negindex; PostgreSQL reads the pairs alone): the
// method the relay's NIP-77 server asks too.
type indexed interface {
	NegentropyStorage(ctx context.Context, f nostr.Filter, max int) (st negentropy.Storage, ok bool, err error)
}

// Set answers from the store's negentropy pairs when it has them for
// filter: a walk over compact pairs instead of a query decoding every event
// we hold (a whole-store catch-up at 1,000,000 events decoded them all,
// before its first NEG-OPEN; issue 27 part 3).
func (l StoreLocal) Set(ctx context.Context, filter nostr.Filter) (negentropy.Storage, bool, error) {
	ix, ok := l.Store.(indexed)
	if !ok {
		return nil, false, nil
	}
	// no bound: this is our own store, and the pairs are what Items would
	// hold anyway, in a tenth of the memory
	st, ok, err := ix.NegentropyStorage(ctx, filter, math.MaxInt32)
	if err != nil {
		return nil, false, fmt.Errorf("local negentropy index: %w", err)
	}
	return st, ok, nil
}
