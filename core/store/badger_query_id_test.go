package store

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

// The id index holds an id's first 8 bytes: events whose ids share them
// are told apart by their records, in every lookup by id (an ids filter,
// the duplicate check of a save, a deletion), and an ids filter answers
// each event once, newest first, within its limit.
func TestIDLookupTellsApartIDsSharingTheirFirst8Bytes(t *testing.T) {
	s := openTest(t, Options{UnsafeNoSync: true})
	es := s.Events()
	ctx := context.Background()
	g := newRandStore(8)
	mk := func(prefix string, ts nostr.Timestamp) *nostr.Event {
		evt := g.event(ts)
		evt.ID = prefix + randHex(g.r, 24)
		return evt
	}
	shared := randHex(rand.New(rand.NewSource(9)), 8)
	a, b, c := mk(shared, 1_700_000_300), mk(shared, 1_700_000_100), mk(randHex(g.r, 8), 1_700_000_200)
	mustSave(t, es, a, b, c)
	ids := func(evts []*nostr.Event) []string {
		var out []string
		for _, e := range evts {
			out = append(out, e.ID)
		}
		return out
	}
	check := func(f nostr.Filter, want ...*nostr.Event) {
		t.Helper()
		if got := ids(query(t, ctx, es, f)); !slices.Equal(got, ids(want)) {
			t.Errorf("%v: got %v, want %v", f.IDs, got, ids(want))
		}
	}
	check(nostr.Filter{IDs: []string{a.ID}}, a)
	check(nostr.Filter{IDs: []string{b.ID}}, b)
	check(nostr.Filter{IDs: []string{b.ID, c.ID, a.ID, b.ID}}, a, c, b)
	check(nostr.Filter{IDs: []string{b.ID, c.ID, a.ID}, Limit: 2}, a, c)
	check(nostr.Filter{IDs: []string{shared + randHex(g.r, 24)}})
	check(nostr.Filter{IDs: []string{a.ID}, Kinds: []int{a.Kind + 1}})

	if err := es.SaveEvent(ctx, a); !errors.Is(err, eventstore.ErrDupEvent) {
		t.Errorf("saving %s again: %v, want a duplicate", a.ID, err)
	}
	d := mk(shared, 1_700_000_400)
	if err := es.SaveEvent(ctx, d); err != nil {
		t.Errorf("a new id sharing 8 bytes with stored ones was refused: %v", err)
	}
	if err := es.DeleteEvent(ctx, a); err != nil {
		t.Fatal(err)
	}
	check(nostr.Filter{IDs: []string{a.ID, b.ID, d.ID}}, d, b)
}
