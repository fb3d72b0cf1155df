package store

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/negindex"
)

// R-2 on PostgreSQL (issue 27): a NEG-OPEN's set comes from one query of
// (created_at, id) pairs instead of pages of whole events, and it is
// exactly the set the store's query gives for the same filter, bounded by
// negentropy_max_events. The store's query pages past ties of created_at
// at page boundaries (its keyset condition is the index's bound now), so
// the whole store read page by page is every stored event once.
func TestR2_PostgresNegentropySetIsTheQuerysSet(t *testing.T) {
	const n = 2_000 // more than two query pages of 500 stay after replacements
	s := openPostgresTest(t, Options{Limits: config.Limits{NegentropyMaxEvents: 5000}})
	es := s.Events().(*events)
	g := newRandStore(27)
	ctx := context.Background()
	for range n {
		// one base: ~30 events per created_at, so pages end inside ties
		evt := g.event(1000)
		if evt.Tags == nil {
			evt.Tags = nostr.Tags{} // as an event decoded from JSON
		}
		g.store(t, es, evt)
	}
	neg := eventstore.SetNegentropy(ctx)
	everything := query(t, neg, es, nostr.Filter{})
	if len(everything) < 2*pgPageRows {
		t.Fatalf("the store holds %d events after replacements, want more than two pages", len(everything))
	}
	if len(sortedPairs(everything)) != len(everything) {
		t.Fatalf("the whole store read page by page repeats events: %d read, %d distinct", len(everything), len(sortedPairs(everything)))
	}
	pairs := func(f nostr.Filter, max int) ([]string, error) {
		t.Helper()
		st, ok, err := es.NegentropyStorage(ctx, f, max)
		if !ok {
			t.Fatalf("filter %s: PostgreSQL did not answer the set", f)
		}
		if err != nil {
			return nil, err
		}
		snap := st.(*negindex.Snapshot)
		var got []string
		for _, it := range snap.Range(0, snap.Size()) {
			got = append(got, fmt.Sprintf("%010d:%s", it.Timestamp, it.ID))
		}
		return got, nil
	}
	for i := 0; i <= 60; i++ {
		f := nostr.Filter{}
		switch {
		case i == 1:
			f.Limit = 7 // the newest 7, as the query gives them
		case i > 1:
			f = g.filter()
		}
		scan := sortedPairs(query(t, neg, es, f))
		if f.Limit == 0 {
			checkMatches(t, f, scan, everything)
		}
		got, err := pairs(f, 5000)
		if err != nil {
			t.Fatalf("filter %s: %v", f, err)
		}
		if !slices.Equal(got, scan) {
			t.Fatalf("filter %s: the set has %d pairs, the store query %d", f, len(got), len(scan))
		}
	}
	// negentropy_max_events: one more than it is refused, not truncated.
	if _, err := pairs(nostr.Filter{}, len(everything)-1); err != ErrTooManyEvents {
		t.Fatalf("%d events, max %d: %v, want ErrTooManyEvents", len(everything), len(everything)-1, err)
	}
	if got, err := pairs(nostr.Filter{}, len(everything)); err != nil || len(got) != len(everything) {
		t.Fatalf("%d events, max as many: %d pairs, %v", len(everything), len(got), err)
	}
}
