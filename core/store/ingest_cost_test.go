package store

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// The write path's lookups (issue 27 part 5): a save's duplicate check asks
// for an id not stored, policy and GRASP-08 for the few events an event
// names. Their cost is bounded in allocations, never in time.

// Guard of the cut: a lookup by an id never stored, answered by the id
// filter, opens no read transaction and starts no goroutine: 3 allocations
// (the filter's plan and channel); before, it did both, 6.
func TestQueryOfANewIDAllocatesLittle(t *testing.T) {
	s := openTest(t, Options{UnsafeNoSync: true})
	testwait.For(t, "the id filter to load", s.badger().idFilterReady)
	g := newRandStore(5)
	stored := g.event(1_700_000_000)
	mustSave(t, s.Events(), stored)
	ctx := context.Background()
	fresh := g.event(1_700_000_100)
	f := nostr.Filter{IDs: []string{fresh.ID}, Limit: 1}
	n := testing.AllocsPerRun(50, func() {
		ch, err := s.Events().QueryEvents(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for range ch {
			t.Fatal("an id never stored was found")
		}
	})
	if n > 4 {
		t.Errorf("a lookup of an id never stored allocated %.0f times, want at most 4", n)
	}
	if got := query(t, ctx, s.Events(), nostr.Filter{IDs: []string{fresh.ID, stored.ID}}); len(got) != 1 || got[0].ID != stored.ID {
		t.Errorf("an ids filter of one stored and one new id found %d events, want the stored one", len(got))
	}
}

// Repeated ids, authors, kinds and tag values still find each event once,
// and a filter without repeats is used as it came (no copies).
func TestQueryRepeatsAnswerOnceAndNoRepeatsCopyNothing(t *testing.T) {
	s := openTest(t, Options{UnsafeNoSync: true})
	g := newRandStore(6)
	a, b := g.event(1_700_000_000), g.event(1_700_000_100)
	a.Tags = append(a.Tags, nostr.Tag{"t", "x"})
	b.Tags = append(b.Tags, nostr.Tag{"t", "y"})
	mustSave(t, s.Events(), a, b)
	ctx := context.Background()
	for _, f := range []nostr.Filter{
		{IDs: []string{a.ID, b.ID, a.ID}},
		{Authors: []string{a.PubKey, b.PubKey, b.PubKey}},
		{Tags: nostr.TagMap{"t": {"x", "y", "x", "y"}}},
		{Kinds: []int{a.Kind, b.Kind, a.Kind}, Tags: nostr.TagMap{"t": {"y", "x", "y"}}},
	} {
		var got []string
		for _, e := range query(t, ctx, s.Events(), f) {
			got = append(got, e.ID)
		}
		slices.Sort(got)
		want := []string{a.ID, b.ID}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%v: got %v, want each of %v once", f, got, want)
		}
	}
	plain := nostr.Filter{IDs: []string{a.ID, b.ID}, Kinds: []int{1, 2}, Tags: nostr.TagMap{"t": {"x", "y"}, "e": {a.ID}}}
	if n := testing.AllocsPerRun(50, func() { withoutRepeats(plain) }); n > 0 {
		t.Errorf("a filter without repeats was copied (%.0f allocations)", n)
	}
	rep := nostr.Filter{Tags: nostr.TagMap{"t": {"x", "x"}}}
	if got := withoutRepeats(rep); len(got.Tags["t"]) != 1 || len(rep.Tags["t"]) != 2 {
		t.Errorf("repeats: got %v, and the caller's filter became %v", got.Tags, rep.Tags)
	}
}
