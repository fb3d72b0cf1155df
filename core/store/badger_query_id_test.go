package store

import (
	"context"
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testwait"
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

// A save's duplicate check and an ids filter answer an id never stored
// from the id filter, without seeking badger's id index (issue 27 part 3:
// at a million events that seek was two thirds of the writer's time); an id
// stored is still found, before and after a restart reloads the filter, and
// while the filter is not loaded every lookup asks badger. Counted in
// seeks, not time.
func TestNewIDsAreAnsweredWithoutSeekingTheIDIndex(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir, UnsafeNoSync: true})
	bs := s.badger()
	testwait.For(t, "the id filter to load", bs.idFilterReady)
	ctx := context.Background()
	g := newRandStore(27)
	var evts []*nostr.Event
	for i := range 2000 {
		evts = append(evts, g.event(nostr.Timestamp(1_700_000_000+i)))
	}
	seeks := bs.idSeeks.Load()
	mustSave(t, s.Events(), evts...)
	if n := bs.idSeeks.Load() - seeks; n > int64(len(evts))/20 {
		t.Errorf("saving %d new events sought the id index %d times, want at most %d", len(evts), n, len(evts)/20)
	}
	seeks = bs.idSeeks.Load()
	var never []string
	for range 200 {
		never = append(never, randHex(g.r, 32))
	}
	if got := query(t, ctx, s.Events(), nostr.Filter{IDs: never}); len(got) != 0 {
		t.Errorf("ids never stored found %d events", len(got))
	}
	if n := bs.idSeeks.Load() - seeks; n > 10 {
		t.Errorf("an ids filter of 200 ids never stored sought the id index %d times, want at most 10", n)
	}
	dupsRefused := func(s *Store, evts []*nostr.Event) {
		t.Helper()
		for _, e := range evts {
			if err := s.Events().SaveEvent(ctx, e); !errors.Is(err, eventstore.ErrDupEvent) {
				t.Fatalf("saving %s again: %v, want a duplicate", e.ID, err)
			}
		}
		if got := query(t, ctx, s.Events(), nostr.Filter{IDs: []string{evts[0].ID, evts[len(evts)-1].ID}}); len(got) != 2 {
			t.Errorf("an ids filter of 2 stored events found %d", len(got))
		}
	}
	dupsRefused(s, evts[:100])

	// not loaded: badger answers every lookup
	bs.ids.mu.Lock()
	bs.ids.ready = false
	bs.ids.mu.Unlock()
	seeks = bs.idSeeks.Load()
	fresh := g.event(1_700_100_000)
	mustSave(t, s.Events(), fresh)
	dupsRefused(s, []*nostr.Event{fresh, evts[7]})
	if bs.idSeeks.Load()-seeks < 3 {
		t.Errorf("with the id filter not loaded, lookups did not reach badger")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := openTest(t, Options{Dir: dir, UnsafeNoSync: true})
	testwait.For(t, "the id filter to load again", s2.badger().idFilterReady)
	dupsRefused(s2, append(evts[len(evts)-100:], fresh))
	seeks = s2.badger().idSeeks.Load()
	var more []*nostr.Event
	for i := range 500 {
		more = append(more, g.event(nostr.Timestamp(1_700_200_000+i)))
	}
	mustSave(t, s2.Events(), more...)
	if n := s2.badger().idSeeks.Load() - seeks; n > int64(len(more))/20 {
		t.Errorf("after a restart, saving %d new events sought the id index %d times", len(more), n)
	}
}
