package catchup

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/negindex"
)

// indexedMem is a store with a negentropy index, as core/store's badger
// backend is: NegentropyStorage answers from the index, QueryEvents decodes
// (and is counted).
type indexedMem struct {
	*memStore
	queries atomic.Int64
	sets    atomic.Int64
}

func (m *indexedMem) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	m.queries.Add(1)
	items, _ := m.Items(ctx, f)
	ch := make(chan *nostr.Event, len(items))
	for _, it := range items {
		ch <- m.events[it.ID]
	}
	close(ch)
	return ch, nil
}

func (m *indexedMem) NegentropyStorage(_ context.Context, f nostr.Filter, max int) (negentropy.Storage, bool, error) {
	m.sets.Add(1)
	ix := negindex.New(nil)
	m.mu.Lock()
	for _, e := range m.events {
		if ie, ok := negindex.FromNostr(e); ok {
			ix.Add(ie)
		}
	}
	m.mu.Unlock()
	st, ok, err := ix.Select(f, max)
	return st, ok, err
}

// A catch-up over a store with a negentropy index reconciles from the index
// and never lists the store's events (at 1,000,000 events that listing
// decoded every one of them before the first NEG-OPEN; issue 27 part 3); it
// still finds exactly what the peer has and we lack.
func TestG02_1_NegentropyFromTheLocalIndex(t *testing.T) {
	evts := testPool(t)
	url := upstream(t, evts, upstreamOpts{negentropy: true})
	store := &indexedMem{memStore: newMem(evts[200:1000]...)}
	c := newClient(t, Config{}, env.Env{})
	res, err := c.CatchUp(ctxFor(t), url, allKinds, StoreLocal{Store: store}, store, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodNegentropy || res.Local != 800 || res.Needed != len(evts)-800 || res.Delivered != len(evts)-800 || res.PeerLacks != 0 {
		t.Fatalf("result %+v, want negentropy from 800 local events, %d needed and delivered", res, len(evts)-800)
	}
	if q, s := store.queries.Load(), store.sets.Load(); q != 0 || s != 1 {
		t.Fatalf("the store was queried %d times and its index asked %d times, want 0 and 1", q, s)
	}
	requireHolds(t, store.memStore, evts)
}

// Falling back to REQ paging after a set from the index still knows what
// we hold: none of it is delivered again.
func TestG02_5_FallbackFromTheLocalIndexSkipsWhatWeHold(t *testing.T) {
	evts := testPool(t)
	url := upstream(t, evts, upstreamOpts{negentropy: false, reqCap: 500})
	store := &indexedMem{memStore: newMem(evts[:600]...)}
	c := newClient(t, Config{}, env.Env{})
	res, err := c.CatchUp(ctxFor(t), url, allKinds, StoreLocal{Store: store}, store, realClock(t, Options{Negentropy: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Method != MethodReq || res.Delivered != len(evts)-600 || res.Rejected != 0 || res.Known != 600 {
		t.Fatalf("result %+v, want REQ paging delivering %d, knowing 600", res, len(evts)-600)
	}
	requireHolds(t, store.memStore, evts)
}

// Without NIP-77, or with a store that has no index, the events are listed.
func TestStoreLocalSetOnlyFromAnIndex(t *testing.T) {
	store := &indexedMem{memStore: newMem(corpus(t, 10, 0)...)}
	if _, ok, err := (StoreLocal{Store: store.memStoreQuerier()}).Set(context.Background(), allKinds); ok || err != nil {
		t.Fatalf("a store without an index answered Set: ok %v err %v", ok, err)
	}
	set, _, err := localOf(context.Background(), StoreLocal{Store: store}, allKinds, false)
	if err != nil || set.Size() != 10 || store.sets.Load() != 0 || store.queries.Load() != 1 {
		t.Fatalf("without NIP-77: set of %v (err %v), index asked %d times, queried %d, want 10 from one query", set, err, store.sets.Load(), store.queries.Load())
	}
}

// memStoreQuerier hides the index.
func (m *indexedMem) memStoreQuerier() Querier { return queryOnly{m} }

type queryOnly struct{ m *indexedMem }

func (q queryOnly) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	return q.m.QueryEvents(ctx, f)
}

// Our side is a negindex Snapshot, malformed ids left out; an item no
// Snapshot can hold (created_at before 1970) makes it go-nostr's vector,
// still without the malformed ids the vector would panic on.
func TestLocalSetLeavesOutMalformedIDs(t *testing.T) {
	good := corpus(t, 3, 0)
	items := []Item{{ID: good[0].ID, CreatedAt: good[0].CreatedAt}, {ID: "NOT-HEX", CreatedAt: 5}, {ID: good[1].ID, CreatedAt: good[1].CreatedAt}}
	set := localSet(items)
	if _, ok := set.(*negindex.Snapshot); !ok || set.Size() != 2 {
		t.Fatalf("local set %T of %d items, want a negindex snapshot of 2", set, set.Size())
	}
	items = append(items, Item{ID: good[2].ID, CreatedAt: -5})
	set = localSet(items)
	if _, ok := set.(*negindex.Snapshot); ok || set.Size() != 3 {
		t.Fatalf("local set %T of %d items, want go-nostr's vector of 3", set, set.Size())
	}
}
