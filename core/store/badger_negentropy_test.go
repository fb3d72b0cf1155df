package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/negindex"
)

// Issue 15 part 1: NIP-77 sessions are answered from the negentropy index.
// Random stores built by random saves, replacements and deletions, then
// reopened (the index is loaded again from disk), must give for random
// filters exactly the (created_at, id) set the store query gives, and both
// must equal nostr.Filter.Matches over everything stored. A missed update
// (a deletion, an older version a replacement removed) fails it.
func TestNegentropyIndexMatchesScan(t *testing.T) {
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			testNegentropyIndexMatchesScan(t, seed)
		})
	}
}

type randStore struct {
	r       *rand.Rand
	authors []string
	hexes   []string // e/E/q values
	coordsA []string // a values
	coordsB []string // A values (another kind, so badger's shared a/A key prefix cannot mix them)
	stored  []*nostr.Event
}

func randHex(r *rand.Rand, n int) string {
	b := make([]byte, n)
	r.Read(b)
	return hex.EncodeToString(b)
}

func newRandStore(seed int64) *randStore {
	r := rand.New(rand.NewSource(seed))
	g := &randStore{r: r}
	for range 4 {
		g.authors = append(g.authors, randHex(r, 32))
	}
	for range 6 {
		g.hexes = append(g.hexes, randHex(r, 32))
	}
	for i := range 3 {
		g.coordsA = append(g.coordsA, fmt.Sprintf("30617:%s:repo%d", g.authors[i], i))
		g.coordsB = append(g.coordsB, fmt.Sprintf("30618:%s:repo%d", g.authors[i], i))
	}
	return g
}

var randKinds = []int{1, 1111, 1617, 1621, 1630, 0, 10002, 30617, 30618}

func (g *randStore) event(base nostr.Timestamp) *nostr.Event {
	r := g.r
	evt := &nostr.Event{
		ID:        randHex(r, 32),
		PubKey:    g.authors[r.Intn(len(g.authors))],
		Sig:       randHex(r, 64),
		Kind:      randKinds[r.Intn(len(randKinds))],
		CreatedAt: base + nostr.Timestamp(r.Intn(40)), // ties on purpose
		Content:   "x",
	}
	if nostr.IsAddressableKind(evt.Kind) {
		evt.Tags = append(evt.Tags, nostr.Tag{"d", fmt.Sprint("repo", r.Intn(3))})
	}
	for range r.Intn(5) {
		switch r.Intn(7) {
		case 0:
			evt.Tags = append(evt.Tags, nostr.Tag{"a", g.coordsA[r.Intn(3)]})
		case 1:
			evt.Tags = append(evt.Tags, nostr.Tag{"A", g.coordsB[r.Intn(3)]})
		case 2:
			evt.Tags = append(evt.Tags, nostr.Tag{"e", g.hexes[r.Intn(len(g.hexes))], "", "root"})
		case 3:
			evt.Tags = append(evt.Tags, nostr.Tag{"E", g.hexes[r.Intn(len(g.hexes))]})
		case 4:
			evt.Tags = append(evt.Tags, nostr.Tag{"q", g.hexes[r.Intn(len(g.hexes))]})
		case 5:
			evt.Tags = append(evt.Tags, nostr.Tag{"p", g.authors[r.Intn(len(g.authors))]})
		default:
			evt.Tags = append(evt.Tags, nostr.Tag{"t", fmt.Sprint("topic", r.Intn(3))})
		}
	}
	return evt
}

// store saves evt (replacing, for a replaceable or addressable kind) and
// remembers it.
func (g *randStore) store(t *testing.T, es EventStore, evt *nostr.Event) {
	t.Helper()
	var err error
	if nostr.IsReplaceableKind(evt.Kind) || nostr.IsAddressableKind(evt.Kind) {
		err = es.ReplaceEvent(context.Background(), evt)
	} else {
		err = es.SaveEvent(context.Background(), evt)
	}
	if err != nil {
		t.Fatal(err)
	}
	g.stored = append(g.stored, evt)
}

func (g *randStore) filter() nostr.Filter {
	r := g.r
	var f nostr.Filter
	if r.Intn(3) == 0 {
		for range 1 + r.Intn(3) {
			f.Kinds = append(f.Kinds, randKinds[r.Intn(len(randKinds))])
		}
	}
	if r.Intn(4) == 0 {
		f.Authors = []string{g.authors[r.Intn(len(g.authors))]}
		if r.Intn(3) == 0 {
			f.Authors = append(f.Authors, randHex(r, 32)) // unknown
		}
	}
	if r.Intn(3) == 0 {
		s := nostr.Timestamp(1000 + r.Intn(200))
		f.Since = &s
	}
	if r.Intn(3) == 0 {
		u := nostr.Timestamp(1000 + r.Intn(200))
		f.Until = &u
	}
	if r.Intn(2) == 0 {
		f.Tags = nostr.TagMap{}
		for range 1 + r.Intn(2) {
			switch r.Intn(7) {
			case 0:
				f.Tags["a"] = []string{g.coordsA[r.Intn(3)], g.coordsA[r.Intn(3)]}
			case 1:
				f.Tags["A"] = []string{g.coordsB[r.Intn(3)]}
			case 2:
				f.Tags["e"] = []string{g.hexes[r.Intn(len(g.hexes))], g.hexes[r.Intn(len(g.hexes))]}
			case 3:
				f.Tags["E"] = []string{g.hexes[r.Intn(len(g.hexes))]}
			case 4:
				f.Tags["q"] = []string{g.hexes[r.Intn(len(g.hexes))], randHex(r, 32)}
			case 5:
				f.Tags["d"] = []string{fmt.Sprint("repo", r.Intn(3))}
			default:
				f.Tags["t"] = []string{fmt.Sprint("topic", r.Intn(3))} // not indexed: the store answers
			}
		}
	}
	return f
}

func testNegentropyIndexMatchesScan(t *testing.T, seed int64) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, UnsafeNoSync: true, Limits: smallNegLimit}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	waitIndexReady(t, s)
	g := newRandStore(seed)
	es := s.Events()
	for round := range 4 {
		base := nostr.Timestamp(1000 + 40*round)
		for range 120 {
			switch n := g.r.Intn(10); {
			case n < 2 && len(g.stored) > 0:
				victim := g.stored[g.r.Intn(len(g.stored))]
				if err := es.DeleteEvent(ctx, victim); err != nil {
					t.Fatal(err)
				}
			case n < 3 && len(g.stored) > 0:
				// An event again: a duplicate changes nothing, a deleted
				// one comes back.
				dup := g.stored[g.r.Intn(len(g.stored))]
				if nostr.IsRegularKind(dup.Kind) {
					if err := es.SaveEvent(ctx, dup); err != nil && err != eventstore.ErrDupEvent {
						t.Fatalf("saving an event again: %v", err)
					}
				}
			default:
				g.store(t, es, g.event(base))
			}
		}
		compareIndexWithScan(t, s, g, 60)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Loaded from disk on open.
	s, err = New(Options{Dir: dir, UnsafeNoSync: true, Limits: smallNegLimit}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitIndexReady(t, s)
	compareIndexWithScan(t, s, g, 60)
}

func waitIndexReady(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !s.badger().neg.usable() {
		if time.Now().After(deadline) {
			t.Fatal("negentropy index never became ready")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkMatches fails unless scan, a query's sorted pairs, are those of the
// events in everything that f matches.
func checkMatches(t *testing.T, f nostr.Filter, scan []string, everything []*nostr.Event) {
	t.Helper()
	var oracle []*nostr.Event
	for _, e := range everything {
		if f.Matches(e) {
			oracle = append(oracle, e)
		}
	}
	if want := sortedPairs(oracle); !slices.Equal(scan, want) {
		t.Fatalf("filter %s: the store query gives %d events, Filter.Matches %d", f, len(scan), len(want))
	}
}

func sortedPairs(evts []*nostr.Event) []string {
	out := make([]string, 0, len(evts))
	for _, e := range evts {
		out = append(out, fmt.Sprintf("%010d:%s", e.CreatedAt, e.ID))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func compareIndexWithScan(t *testing.T, s *Store, g *randStore, filters int) {
	t.Helper()
	ctx := eventstore.SetNegentropy(context.Background())
	es := s.Events().(*events)
	everything := query(t, ctx, es, nostr.Filter{})
	answered := 0
	for i := 0; i <= filters; i++ {
		f := nostr.Filter{}
		if i > 0 {
			f = g.filter()
		}
		scan := sortedPairs(query(t, ctx, es, f))
		checkMatches(t, f, scan, everything)
		st, ok, err := es.NegentropyStorage(context.Background(), f, 1_000_000)
		if err != nil {
			t.Fatalf("filter %s: %v", f, err)
		}
		_, hasT := f.Tags["t"]
		if ok == hasT {
			t.Fatalf("filter %s: answered by the index %v, want %v", f, ok, !hasT)
		}
		if !ok {
			continue
		}
		answered++
		snap := st.(*negindex.Snapshot)
		var got []string
		for _, it := range snap.Range(0, snap.Size()) {
			got = append(got, fmt.Sprintf("%010d:%s", it.Timestamp, it.ID))
		}
		if !slices.Equal(got, scan) {
			t.Fatalf("filter %s: index gives %d pairs, store query %d\nindex: %v\nscan:  %v", f, len(got), len(scan), got, scan)
		}
	}
	if answered == 0 {
		t.Fatal("no filter was answered by the index")
	}
}

// A filter matching more events than a session may hold is refused, not
// truncated.
func TestNegentropyIndexRefusesTooMany(t *testing.T) {
	s := openTestEnv(t, Options{}, env.Env{})
	waitIndexReady(t, s)
	g := newRandStore(9)
	for range 5 {
		evt := g.event(1000)
		evt.Kind = 1
		mustSave(t, s.Events(), evt)
	}
	es := s.Events().(*events)
	if _, ok, err := es.NegentropyStorage(context.Background(), nostr.Filter{}, 4); !ok || err != ErrTooManyEvents {
		t.Fatalf("5 events, max 4: ok %v err %v; want ErrTooManyEvents", ok, err)
	}
	if st, ok, err := es.NegentropyStorage(context.Background(), nostr.Filter{Kinds: []int{1}}, 5); !ok || err != nil || st.Size() != 5 {
		t.Fatalf("5 events, max 5: ok %v err %v", ok, err)
	}
}

// smallNegLimit keeps the store query's per-session preallocation (one slot
// per event a session may hold) small, so the comparisons run quickly.
var smallNegLimit = config.Limits{NegentropyMaxEvents: 5000}

// F07: a NEG-OPEN that arrives while the index is still loading after a
// restart waits for it and is answered from it, instead of decoding every
// event of the store for that session.
func TestNegentropyIndexWaitedForRightAfterOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, UnsafeNoSync: true, Limits: smallNegLimit}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	g := newRandStore(11)
	const n = 3000
	for range n {
		evt := g.event(1000)
		evt.Kind = 1
		mustSave(t, s.Events(), evt)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = New(Options{Dir: dir, UnsafeNoSync: true, Limits: smallNegLimit}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, ok, err := s.Events().(*events).NegentropyStorage(context.Background(), nostr.Filter{}, n)
	if !ok || err != nil {
		t.Fatalf("NEG-OPEN right after open: answered from the index %v, err %v; want it answered once the index loads", ok, err)
	}
	if st.Size() != n {
		t.Fatalf("the index answered %d events, want %d", st.Size(), n)
	}
}
