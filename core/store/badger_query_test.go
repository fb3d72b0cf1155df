package store

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore"
	ebadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// layoutEvents are events whose tags exercise every index key shape: an
// address (a and A), 64-hex values in either case, values of 100 and 101
// bytes, empty values, one-item tags, repeated tags, long letters, values
// with colons that are not addresses.
func layoutEvents(r *rand.Rand) []*nostr.Event {
	g := newRandStore(r.Int63())
	pk := g.authors[0]
	tagSets := []nostr.Tags{
		{{"a", "30617:" + pk + ":repo"}, {"A", "30617:" + pk + ":repo"}},
		{{"a", "30617:" + strings.ToUpper(pk) + ":Repo"}, {"e", strings.ToUpper(g.hexes[0])}},
		{{"e", g.hexes[1], "wss://x", "root"}, {"e", g.hexes[1]}, {"p", pk}},
		{{"t", strings.Repeat("x", 100)}, {"t", strings.Repeat("y", 101)}, {"t", ""}, {"t"}},
		{{"d", "a:b:c"}, {"r", "30617:nothex:repo"}, {"i", "99999:" + pk + ":x"}, {"title", "long letter"}},
		{{"a", "30617:" + pk + ":" + strings.Repeat("d", 40)}, {"q", g.hexes[2]}, {"g", "x:y"}},
		{},
	}
	var out []*nostr.Event
	for i := range 60 {
		evt := g.event(nostr.Timestamp(1_700_000_000 + i))
		evt.Tags = append(evt.Tags, tagSets[i%len(tagSets)]...)
		out = append(out, evt)
	}
	return out
}

// The records and index keys written here are the library's, byte for byte:
// stores written by earlier grasp versions (through the library) are read
// as they are, and the library's open-time code still understands ours.
func TestBadgerLayoutIsTheLibrarys(t *testing.T) {
	r := rand.New(rand.NewSource(27))
	evts := layoutEvents(r)
	lib := &ebadger.BadgerBackend{Path: t.TempDir(), BadgerOptionsModifier: func(o badger.Options) badger.Options {
		return o.WithLogger(nil)
	}}
	if err := lib.Init(); err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	want := map[string]string{}
	for _, evt := range evts {
		if err := lib.SaveEvent(context.Background(), evt); err != nil {
			t.Fatal(err)
		}
	}
	err := lib.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			if k[0] > keyTagAddr {
				continue // the library's version key
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			want[string(k)] = string(v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, evt := range evts {
		p := prepare(evt)
		p.setSerial(uint32(i + 1))
		got[string(rawKey(uint32(i+1)))] = string(p.record)
		for _, k := range p.keys {
			got[string(k)] = ""
		}
		var again nostr.Event
		if err := decodeRecord(p.record, &again); err != nil || again.String() != evt.String() {
			t.Fatalf("event %d: decoded record differs (%v):\n%s\n%s", i, err, again.String(), evt.String())
		}
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("the library wrote key %x (value %d bytes); here: present %v, value equal %v", k, len(v), ok, g == v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("key %x written here, not by the library", k)
		}
	}
}

func TestDecodeRecordRefusesTruncatedRecords(t *testing.T) {
	evt := layoutEvents(rand.New(rand.NewSource(1)))[0]
	rec := prepare(evt).record
	for n := range len(rec) {
		var e nostr.Event
		if err := decodeRecord(rec[:n], &e); err == nil {
			t.Fatalf("a record cut to %d of %d bytes decoded", n, len(rec))
		}
	}
}

// queryModel is what a store must hold after a sequence of writes: NIP-01's
// rules applied by hand.
type queryModel map[string]*nostr.Event

func (m queryModel) apply(op string, evt *nostr.Event) {
	switch op {
	case "delete":
		delete(m, evt.ID)
	case "replace":
		for id, old := range m {
			same := old.Kind == evt.Kind && old.PubKey == evt.PubKey
			if same && nostr.IsAddressableKind(evt.Kind) {
				same = old.Tags.GetD() == evt.Tags.GetD()
			}
			if !same {
				continue
			}
			if old.CreatedAt > evt.CreatedAt || (old.CreatedAt == evt.CreatedAt && old.ID <= evt.ID) {
				return
			}
			delete(m, id)
		}
		m[evt.ID] = evt
	default:
		m[evt.ID] = evt
	}
}

// checkQuery compares the store's answer to f with the model: newest first,
// every returned event whole and matching, and exactly the model's newest
// matching events, except that among events of the oldest returned
// created_at a limit may pick any.
func checkQuery(t *testing.T, s *Store, m queryModel, f nostr.Filter, limit int, ctx context.Context) {
	t.Helper()
	got := query(t, ctx, s.Events(), f)
	var want []*nostr.Event
	for _, e := range m {
		if f.Matches(e) {
			want = append(want, e)
		}
	}
	slices.SortFunc(want, func(a, b *nostr.Event) int { return int(b.CreatedAt) - int(a.CreatedAt) })
	if len(want) > limit {
		want = want[:limit]
	}
	if len(got) != len(want) {
		t.Fatalf("filter %s: %d events, want %d", f, len(got), len(want))
	}
	seen := map[string]bool{}
	for i, e := range got {
		w, ok := m[e.ID]
		if !ok || w.String() != e.String() {
			t.Fatalf("filter %s: event %d (%s) is not stored as returned", f, i, e.ID)
		}
		if seen[e.ID] {
			t.Fatalf("filter %s: %s returned twice", f, e.ID)
		}
		seen[e.ID] = true
		if !f.Matches(e) {
			t.Fatalf("filter %s: %s does not match", f, e.ID)
		}
		if e.CreatedAt != want[i].CreatedAt {
			t.Fatalf("filter %s: event %d created at %d, want %d", f, i, e.CreatedAt, want[i].CreatedAt)
		}
	}
}

// Every query is checked against NIP-01's matching over a model of what was
// written, on a store with the shapes the index keys get wrong on their
// own: tag values that are prefixes of others ("repo" of "repo-b", of
// "repoa", whose key sorts among real timestamps), `a` and `A` tags of one
// address, values too long for an index key, ties on created_at, packed
// and large contents, replacements, deletions and duplicates; results that
// span many pages; and again after reopening.
func TestBadgerQueriesMatchNIP01(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	limits := config.Limits{MaxLimit: 1000, DefaultLimit: 100, NegentropyMaxEvents: 5000}
	s, err := New(Options{Dir: dir, UnsafeNoSync: true, Limits: limits}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	g := newRandStore(77)
	r := g.r
	m := queryModel{}
	values := []string{"repo", "repo-b", "repoa", "repo~", "g", "git", "github", strings.Repeat("v", 100), strings.Repeat("v", 101)}
	coords := func(kind int) string {
		d := values[r.Intn(4)]
		return fmt.Sprintf("%d:%s:%s", kind, g.authors[r.Intn(2)], d)
	}
	long := strings.Repeat("diff --git a/x b/x\n+line\n", 20)
	write := func(op string, evt *nostr.Event) {
		var err error
		switch op {
		case "delete":
			err = s.Events().DeleteEvent(ctx, evt)
		case "replace":
			err = s.Events().ReplaceEvent(ctx, evt)
		default:
			err = s.Events().SaveEvent(ctx, evt)
			if err == eventstore.ErrDupEvent {
				if _, ok := m[evt.ID]; !ok {
					t.Fatalf("%s refused as a duplicate but not stored", evt.ID)
				}
				return
			}
		}
		if err != nil {
			t.Fatalf("%s %s: %v", op, evt.ID, err)
		}
		m.apply(op, evt)
	}
	var all []*nostr.Event
	for i := range 900 {
		if i%100 == 99 && len(all) > 0 {
			write("delete", all[r.Intn(len(all))])
			continue
		}
		if i%150 == 149 && len(all) > 0 {
			write("save", all[r.Intn(len(all))]) // again
			continue
		}
		evt := g.event(nostr.Timestamp(1_700_000_000 + i/3))
		switch r.Intn(4) {
		case 0:
			evt.Tags = append(evt.Tags, nostr.Tag{"a", coords(30617)})
		case 1:
			evt.Tags = append(evt.Tags, nostr.Tag{"A", coords(30617)}, nostr.Tag{"t", values[r.Intn(len(values))]})
		case 2:
			evt.Tags = append(evt.Tags, nostr.Tag{"t", values[r.Intn(len(values))]}, nostr.Tag{"t", values[r.Intn(len(values))]})
		}
		switch r.Intn(10) {
		case 0:
			evt.Content = long + fmt.Sprint(i) // packed
		case 1:
			if i%300 == 1 { // 3 of them
				evt.Content = strings.Repeat(fmt.Sprintf("%x", i), 70_000/len(fmt.Sprintf("%x", i))) // large
			}
		}
		op := "save"
		if nostr.IsReplaceableKind(evt.Kind) || nostr.IsAddressableKind(evt.Kind) {
			op = "replace"
		}
		write(op, evt)
		all = append(all, evt)
	}
	filter := func() (nostr.Filter, int) {
		f := g.filter()
		if r.Intn(3) == 0 {
			if f.Tags == nil {
				f.Tags = nostr.TagMap{}
			}
			switch r.Intn(3) {
			case 0:
				f.Tags["t"] = []string{values[r.Intn(len(values))]}
			case 1:
				f.Tags["a"] = []string{coords(30617)}
			default:
				f.Tags["A"] = []string{coords(30617), coords(30617)}
			}
		}
		if r.Intn(6) == 0 {
			for range 1 + r.Intn(4) {
				f.IDs = append(f.IDs, all[r.Intn(len(all))].ID)
			}
		}
		if r.Intn(5) == 0 {
			s, u := nostr.Timestamp(1_700_000_000+r.Intn(500)), nostr.Timestamp(1_700_000_000+r.Intn(500))
			f.Since, f.Until = &s, &u
		}
		switch r.Intn(3) {
		case 0:
			return f, limits.DefaultLimit
		case 1:
			f.Limit = 1 + r.Intn(5)
			if f.IDs != nil {
				return f, min(f.Limit, len(f.IDs))
			}
			return f, f.Limit
		default:
			f.Limit = 900 // several pages
			return f, 900
		}
	}
	check := func() {
		for range 250 {
			f, limit := filter()
			if f.IDs != nil && f.Limit == 0 {
				limit = len(f.IDs)
			}
			checkQuery(t, s, m, f, limit, ctx)
		}
		checkQuery(t, s, m, nostr.Filter{}, len(m), eventstore.SetNegentropy(ctx))
	}
	check()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = New(Options{Dir: dir, UnsafeNoSync: true, Limits: limits}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check()
}

// A stored query is read a page at a time: a client that asked for many
// large events and reads none of them holds about one page, however large
// its result (issue 27 part 2, audit F06). Measured in heap bytes, not
// time.
func TestStreamedQueryHoldsAPageNotItsResult(t *testing.T) {
	held := func(events int) uint64 {
		s := openTest(t, Options{UnsafeNoSync: true, Limits: config.Limits{MaxLimit: 5000, DefaultLimit: 100}})
		g := newRandStore(int64(events))
		for i := range events {
			evt := g.event(nostr.Timestamp(1_700_000_000 + i))
			evt.Kind, evt.Tags = 1621, nil
			evt.Content = randHex(g.r, 4096) // 8 KB that does not pack
			mustSave(t, s.Events(), evt)
		}
		const readers = 8
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		var chans []chan *nostr.Event
		for range readers {
			ch, err := s.Events().QueryEvents(ctx, nostr.Filter{Kinds: []int{1621}, Limit: events})
			if err != nil {
				t.Fatal(err)
			}
			<-ch // the first event, then nothing more is read
			chans = append(chans, ch)
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		cancel()
		for _, ch := range chans {
			for range ch {
			}
		}
		if after.HeapAlloc < before.HeapAlloc {
			return 0
		}
		return (after.HeapAlloc - before.HeapAlloc) / readers
	}
	small, large := held(150), held(1000)
	t.Logf("heap held per unread query: %d KiB over 150 events, %d KiB over 1,000 (results of 1.2 and 8 MB)", small>>10, large>>10)
	// A page is at most pageBytes of records (plus the events decoded from
	// them); the whole result of 1,000 events is 8 MB.
	if limit := uint64(3 * pageBytes); large > limit {
		t.Errorf("an unread query over 1,000 events of 8 KB holds %d KiB, more than %d KiB", large>>10, limit>>10)
	}
	if large > 2*small+pageBytes {
		t.Errorf("held memory grows with the result: %d KiB for 150 events, %d KiB for 1,000", small>>10, large>>10)
	}
}
