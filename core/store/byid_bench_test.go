package store

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nocontent"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// BenchmarkSharedRelatedLookup is what an accepted reply costs in lookups
// of the events it names (issue 27 part 5): policy's reference rule and
// GRASP-08's record each ask for the same two ids, on a badger store of
// 2,000 events. Before: two queries (each reader's own); after: one
// under nocontent.Shared. Alternating rounds of the same run:
//
//	go test -run '^$' -bench SharedRelatedLookup -benchmem ./core/store/
func BenchmarkSharedRelatedLookup(b *testing.B) {
	s := openTest(b, Options{UnsafeNoSync: true})
	es := s.Events()
	g := newRandStore(27)
	var stored []*nostr.Event
	for i := range 2000 {
		e := g.event(nostr.Timestamp(1_700_000_000 + i))
		if err := es.SaveEvent(context.Background(), e); err != nil {
			b.Fatal(err)
		}
		stored = append(stored, e)
	}
	idsOf := func(i int) []string {
		return []string{stored[i%len(stored)].ID, stored[(i*7+3)%len(stored)].ID}
	}
	twoReaders := func(ctx context.Context, i int) {
		for range 2 { // policy, then the GRASP-08 record
			got, err := nocontent.ByID(ctx, es, idsOf(i), 0)
			if err != nil || len(got) != 2 {
				b.Fatalf("lookup: %d events, %v", len(got), err)
			}
		}
	}
	testkit.AlternateRounds(b, "event",
		testkit.Side{Name: "apart", Run: func(i int) { twoReaders(context.Background(), i) }},
		testkit.Side{Name: "shared", Run: func(i int) { twoReaders(nocontent.Shared(context.Background()), i) }})
}
