package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// The backend alone gives MaxLimit/4 to a REQ without a limit or above
// MaxLimit, and ties the negentropy cap to MaxLimit. Each case here would
// fail against it: 50/4 = 12.
func TestR4_ReqLimitsAreDeliberate(t *testing.T) {
	testDeliberateLimits(t, openTest(t, Options{Limits: config.Limits{MaxLimit: 50, DefaultLimit: 10, NegentropyMaxEvents: 120}, UnsafeNoSync: true}))
}

// testDeliberateLimits needs a store opened with MaxLimit 50, DefaultLimit 10
// and NegentropyMax 120.
func testDeliberateLimits(t *testing.T, s *Store) {
	sk := testKey(0)
	const total = 200
	for i := range total {
		mustSave(t, s.Events(), signed(t, sk, 1, nostr.Timestamp(10_000+i), "note"))
	}
	neg := eventstore.SetNegentropy(context.Background())
	bg := context.Background()
	cases := []struct {
		name string
		ctx  context.Context
		f    nostr.Filter
		want int
	}{
		{"limit below max is exact", bg, nostr.Filter{Kinds: []int{1}, Limit: 30}, 30},
		{"limit equal to max is exact", bg, nostr.Filter{Kinds: []int{1}, Limit: 50}, 50},
		{"no limit gets DefaultLimit", bg, nostr.Filter{Kinds: []int{1}}, 10},
		{"limit above max gets MaxLimit", bg, nostr.Filter{Kinds: []int{1}, Limit: 1000}, 50},
		{"empty filter above max gets MaxLimit", bg, nostr.Filter{Limit: 5000}, 50},
		{"limit 0 gets nothing", bg, nostr.Filter{Kinds: []int{1}, LimitZero: true}, 0},
		// One more than NegentropyMax: a negentropy server must see that a
		// filter matches too many events to refuse it (issue 9 part 6).
		{"negentropy sees NegentropyMax+1", neg, nostr.Filter{Kinds: []int{1}}, 121},
		{"negentropy above max gets NegentropyMax+1", neg, nostr.Filter{Limit: 100_000}, 121},
		{"negentropy with a small limit is exact", neg, nostr.Filter{Kinds: []int{1}, Limit: 7}, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := query(t, c.ctx, s.Events(), c.f)
			if len(got) != c.want {
				t.Fatalf("got %d events, want %d", len(got), c.want)
			}
			// Newest first, and exactly the newest ones.
			for i, e := range got {
				if want := nostr.Timestamp(10_000 + total - 1 - i); e.CreatedAt != want {
					t.Fatalf("event %d has created_at %d, want %d", i, e.CreatedAt, want)
				}
			}
		})
	}
}

func TestNegentropySeesEverythingUnderTheCap(t *testing.T) {
	s := openTest(t, Options{Limits: config.Limits{MaxLimit: 20, DefaultLimit: 5, NegentropyMaxEvents: 1000}, UnsafeNoSync: true})
	for i := range 300 {
		mustSave(t, s.Events(), signed(t, testKey(i), 1, nostr.Timestamp(5000+i), "x"))
	}
	got := query(t, eventstore.SetNegentropy(context.Background()), s.Events(), nostr.Filter{})
	if len(got) != 300 {
		t.Fatalf("negentropy query saw %d events, want all 300", len(got))
	}
}

func TestDuplicateSaveReturnsErrDupEventUnwrapped(t *testing.T) {
	s := openTest(t, Options{})
	e := signed(t, testKey(0), 1, 1000, "once")
	mustSave(t, s.Events(), e)
	// khatru compares with ==, so the sentinel must come back as is.
	if err := s.Events().SaveEvent(context.Background(), e); err != eventstore.ErrDupEvent {
		t.Fatalf("second save: got %v, want eventstore.ErrDupEvent", err)
	}
}

func TestConcurrentIdenticalEventsStoredOnce(t *testing.T) {
	testConcurrentIdentical(t, openTest(t, Options{}))
}

func testConcurrentIdentical(t *testing.T, s *Store) {
	e := signed(t, testKey(1), 1, 1000, "raced")
	const n = 16
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := *e
			errs <- s.Events().SaveEvent(context.Background(), &c)
		}()
	}
	wg.Wait()
	close(errs)
	var ok, dup int
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case err == eventstore.ErrDupEvent:
			dup++
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 || dup != n-1 {
		t.Fatalf("got %d stored and %d duplicates, want 1 and %d", ok, dup, n-1)
	}
	if got := query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{e.ID}}); len(got) != 1 {
		t.Fatalf("query by id returned %d events, want 1", len(got))
	}
	n64, err := s.Events().CountEvents(context.Background(), nostr.Filter{Kinds: []int{1}})
	if err != nil || n64 != 1 {
		t.Fatalf("count = %d, %v; want 1", n64, err)
	}
}

func TestConcurrentReplaceKeepsOnlyTheNewest(t *testing.T) {
	testConcurrentReplace(t, openTest(t, Options{}))
}

func testConcurrentReplace(t *testing.T, s *Store) {
	sk := testKey(2)
	pk, _ := nostr.GetPublicKey(sk)
	const n = 16
	evts := make([]*nostr.Event, n)
	for i := range n {
		evts[i] = signed(t, sk, 30617, nostr.Timestamp(2000+i), "repo", nostr.Tag{"d", "grasp"})
	}
	var wg sync.WaitGroup
	for _, e := range evts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Events().ReplaceEvent(context.Background(), e); err != nil {
				t.Errorf("replace %d: %v", e.CreatedAt, err)
			}
		}()
	}
	wg.Wait()
	got := query(t, context.Background(), s.Events(), nostr.Filter{Kinds: []int{30617}, Authors: []string{pk}})
	if len(got) != 1 || got[0].ID != evts[n-1].ID {
		var ts []nostr.Timestamp
		for _, e := range got {
			ts = append(ts, e.CreatedAt)
		}
		t.Fatalf("stored versions %v, want only created_at %d", ts, evts[n-1].CreatedAt)
	}
}

func TestDeleteEvent(t *testing.T) {
	testDelete(t, openTest(t, Options{}))
}

func testDelete(t *testing.T, s *Store) {
	keep := signed(t, testKey(0), 1, 1000, "keep")
	gone := signed(t, testKey(0), 1, 1001, "gone")
	mustSave(t, s.Events(), keep, gone)
	ctx := context.Background()
	if err := s.Events().DeleteEvent(ctx, gone); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.Events().DeleteEvent(ctx, gone); err != nil {
		t.Fatalf("deleting a missing event must not fail: %v", err)
	}
	got := query(t, ctx, s.Events(), nostr.Filter{Kinds: []int{1}})
	if len(got) != 1 || got[0].ID != keep.ID {
		t.Fatalf("after delete got %d events, want only the kept one", len(got))
	}
	// A deleted event may be saved again (the relay decides whether to).
	mustSave(t, s.Events(), gone)
}

func TestInvalidEventsAreRefusedAndNothingIsStored(t *testing.T) {
	s := openTest(t, Options{})
	good := func() *nostr.Event { return signed(t, testKey(3), 1, 1000, "x") }
	bigTag := make(nostr.Tag, 256)
	for i := range bigTag {
		bigTag[i] = "v"
	}
	cases := map[string]*nostr.Event{
		"nil":                      nil,
		"short id":                 func() *nostr.Event { e := good(); e.ID = e.ID[:63]; return e }(),
		"uppercase id":             func() *nostr.Event { e := good(); e.ID = strings.ToUpper(e.ID); return e }(),
		"non-hex pubkey":           func() *nostr.Event { e := good(); e.PubKey = strings.Repeat("z", 64); return e }(),
		"short sig":                func() *nostr.Event { e := good(); e.Sig = e.Sig[:126]; return e }(),
		"kind above 65535":         func() *nostr.Event { e := good(); e.Kind = 70000; return e }(),
		"negative created_at":      func() *nostr.Event { e := good(); e.CreatedAt = -1; return e }(),
		"created_at beyond uint32": func() *nostr.Event { e := good(); e.CreatedAt = 1 << 33; return e }(),
		"content over 32 MiB":      func() *nostr.Event { e := good(); e.Content = strings.Repeat("p", maxLargeContent+1); return e }(),
		"tag with 256 items":       func() *nostr.Event { e := good(); e.Tags = nostr.Tags{bigTag}; return e }(),
		"tag item over 64 KiB": func() *nostr.Event {
			e := good()
			e.Tags = nostr.Tags{{"r", strings.Repeat("r", 70_000)}}
			return e
		}(),
	}
	ctx := context.Background()
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			for _, write := range []func(context.Context, *nostr.Event) error{
				s.Events().SaveEvent, s.Events().ReplaceEvent, s.Events().DeleteEvent,
			} {
				err := write(ctx, e)
				if err == nil || !strings.HasPrefix(err.Error(), "invalid: ") {
					t.Fatalf("got %v, want an error starting with \"invalid: \"", err)
				}
			}
		})
	}
	if n, err := s.Events().CountEvents(ctx, nostr.Filter{}); err != nil || n != 0 {
		t.Fatalf("store holds %d events (%v) after only invalid writes, want 0", n, err)
	}
}

func TestContentAtTheLimitRoundTrips(t *testing.T) {
	s := openTest(t, Options{})
	e := signed(t, testKey(4), 1617, 1000, strings.Repeat("d", maxCodecContent),
		nostr.Tag{"a", "30617:" + strings.Repeat("ab", 32) + ":grasp"})
	mustSave(t, s.Events(), e)
	got := query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{e.ID}})
	if len(got) != 1 || got[0].Content != e.Content || !got[0].CheckID() {
		t.Fatalf("patch of %d bytes did not round-trip", len(e.Content))
	}
}

func TestClosedStoreRefusesWorkAndCloseIsIdempotent(t *testing.T) {
	s, err := New(Options{Dir: t.TempDir()}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	mustSave(t, s.Events(), signed(t, testKey(0), 1, 1000, "before"))
	if err := s.Close(); err != nil {
		t.Fatalf("first close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	ctx := context.Background()
	e := signed(t, testKey(0), 1, 1001, "after")
	if err := s.Events().SaveEvent(ctx, e); !errors.Is(err, errClosed) {
		t.Fatalf("save after close: got %v, want errClosed", err)
	}
	if _, err := s.Events().QueryEvents(ctx, nostr.Filter{}); !errors.Is(err, errClosed) {
		t.Fatalf("query after close: got %v, want errClosed", err)
	}
	if err := s.Side().Put(context.Background(), "b", "k", nil, 0); !errors.Is(err, errClosed) {
		t.Fatalf("side put after close: got %v, want errClosed", err)
	}
	if err := s.Maintain(ctx); !errors.Is(err, errClosed) {
		t.Fatalf("maintain after close: got %v, want errClosed", err)
	}
}

func TestReopenKeepsEventsAndSerials(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	first := signed(t, testKey(0), 1, 1000, "first")
	mustSave(t, s.Events(), first)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	second := signed(t, testKey(0), 1, 1001, "second")
	mustSave(t, s.Events(), second)
	got := query(t, context.Background(), s.Events(), nostr.Filter{Kinds: []int{1}})
	ids := []string{}
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	// A reused serial would overwrite the first event's record.
	if !slices.Equal(ids, []string{second.ID, first.ID}) {
		t.Fatalf("after reopen got %v, want [second first]", ids)
	}
}

func TestOptionsValidation(t *testing.T) {
	for name, o := range map[string]Options{
		"no dir":                  {},
		"default above max":       {Dir: t.TempDir(), Limits: config.Limits{MaxLimit: 10, DefaultLimit: 20}},
		"negative limit":          {Dir: t.TempDir(), Limits: config.Limits{MaxLimit: -1}},
		"one compactor":           {Dir: t.TempDir(), NumCompactors: 1},
		"one memtable":            {Dir: t.TempDir(), NumMemtables: 1},
		"negative negentropy max": {Dir: t.TempDir(), Limits: config.Limits{NegentropyMaxEvents: -5}},
	} {
		if s, err := New(o, env.Env{}); err == nil {
			s.Close()
			t.Errorf("%s: Open accepted %+v", name, o)
		}
	}
}

func TestFilterWithEmptyTagNameIsRefused(t *testing.T) {
	s := openTest(t, Options{UnsafeNoSync: true})
	mustSave(t, s.Events(), signed(t, testKey(0), 1, 1000, "x", nostr.Tag{"t", "v"}))
	_, err := s.Events().QueryEvents(context.Background(), nostr.Filter{Tags: nostr.TagMap{"": {"v"}}})
	if err == nil || !strings.HasPrefix(err.Error(), "invalid: ") {
		t.Fatalf("got %v, want an \"invalid: \" error", err)
	}
}

// NDK fetches the ids it reconciled over NIP-77 in one filter without a
// limit (521 in the field report); default_limit 500 used to drop 21 of them
// silently. A filter naming ids gets every matching event up to len(ids)
// (issue 10 part 4); the config's defaults are used, as in production.
func TestG10_IDsOnlyREQWithoutLimitGetsEveryID(t *testing.T) {
	s := openTest(t, Options{UnsafeNoSync: true})
	lim := config.DefaultLimits()
	const n = 521
	if n <= lim.DefaultLimit || n <= lim.MaxLimit || n > lim.MaxFilterItems {
		t.Fatalf("the test needs default_limit and max_limit < %d <= max_filter_items (have %d, %d, %d)", n, lim.DefaultLimit, lim.MaxLimit, lim.MaxFilterItems)
	}
	sk := testKey(1)
	var all []string
	for i := range n + 30 {
		evt := signed(t, sk, 1, nostr.Timestamp(20_000+i), "note")
		mustSave(t, s.Events(), evt)
		all = append(all, evt.ID)
	}
	want := all[10 : 10+n] // not simply the newest ones
	bg := context.Background()

	got := query(t, bg, s.Events(), nostr.Filter{IDs: want})
	if len(got) != n {
		t.Fatalf("ids-only REQ without limit: got %d events, want all %d", len(got), n)
	}
	seen := map[string]bool{}
	for _, e := range got {
		seen[e.ID] = true
	}
	for _, id := range want {
		if !seen[id] {
			t.Fatalf("event %s named in ids was not returned", id)
		}
	}
	// A limit above len(ids) (even above max_limit) still gets every id.
	if got := query(t, bg, s.Events(), nostr.Filter{IDs: want, Limit: 5000}); len(got) != n {
		t.Fatalf("ids with limit 5000: got %d events, want %d", len(got), n)
	}
	// The client's own smaller limit is honoured.
	if got := query(t, bg, s.Events(), nostr.Filter{IDs: want, Limit: 30}); len(got) != 30 {
		t.Fatalf("ids with limit 30: got %d events, want 30", len(got))
	}
	// ids combined with another condition: only what matches it.
	if got := query(t, bg, s.Events(), nostr.Filter{IDs: want, Kinds: []int{7}}); len(got) != 0 {
		t.Fatalf("ids with kinds [7]: got %d events, want 0", len(got))
	}
	// Control: a filter without ids still gets default_limit.
	if got := query(t, bg, s.Events(), nostr.Filter{Kinds: []int{1}}); len(got) != lim.DefaultLimit {
		t.Fatalf("kinds-only REQ without limit: got %d events, want default_limit %d", len(got), lim.DefaultLimit)
	}
}
