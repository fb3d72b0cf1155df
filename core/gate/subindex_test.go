package gate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
)

// The subscription index delivers exactly what testing every filter of
// every subscription delivers, each matching subscription once, on random
// filters (ids, kinds, authors, tags, since/until, empty and nil lists)
// and random events, while subscriptions are opened, replaced and closed.
func TestSubIndexMatchesEveryFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 15))
	hex := func(i int) string { return fmt.Sprintf("%064x", i) }
	kinds := []int{1, 7, 1111, 1617, 1621, 30617}
	tagNames := []string{"a", "A", "e", "p", "t"}
	values := []string{"v0", "v1", "v2", "30617:x:repo", hex(1)}
	pickStrings := func(pool []string) []string {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []string{} // matches nothing
		}
		out := []string{}
		for range 1 + rng.IntN(3) {
			out = append(out, pool[rng.IntN(len(pool))])
		}
		return out
	}
	ids := []string{hex(10), hex(11), hex(12), hex(13)}
	authors := []string{hex(20), hex(21), hex(22)}
	randFilter := func() nostr.Filter {
		var f nostr.Filter
		if rng.IntN(5) == 0 {
			f.IDs = pickStrings(ids)
		}
		if rng.IntN(2) == 0 {
			f.Authors = pickStrings(authors)
		}
		if rng.IntN(2) == 0 {
			switch rng.IntN(4) {
			case 0:
				f.Kinds = []int{}
			default:
				for range 1 + rng.IntN(3) {
					f.Kinds = append(f.Kinds, kinds[rng.IntN(len(kinds))])
				}
			}
		}
		for range rng.IntN(3) {
			if f.Tags == nil {
				f.Tags = nostr.TagMap{}
			}
			f.Tags[tagNames[rng.IntN(len(tagNames))]] = pickStrings(values)
		}
		if rng.IntN(4) == 0 {
			ts := nostr.Timestamp(100 + rng.IntN(100))
			f.Since = &ts
		}
		if rng.IntN(4) == 0 {
			ts := nostr.Timestamp(100 + rng.IntN(100))
			f.Until = &ts
		}
		return f
	}
	randEvent := func() *nostr.Event {
		e := &nostr.Event{ID: ids[rng.IntN(len(ids))], PubKey: authors[rng.IntN(len(authors))],
			Kind: kinds[rng.IntN(len(kinds))], CreatedAt: nostr.Timestamp(100 + rng.IntN(100))}
		for range rng.IntN(5) {
			tag := nostr.Tag{tagNames[rng.IntN(len(tagNames))]}
			for range rng.IntN(3) {
				tag = append(tag, values[rng.IntN(len(values))])
			}
			e.Tags = append(e.Tags, tag)
		}
		return e
	}

	x := newSubIndex()
	conns := make([]*conn, 8)
	open := make([]map[string]*subscription, len(conns))
	for i := range conns {
		conns[i] = &conn{}
		open[i] = map[string]*subscription{}
	}
	matched, checked := 0, 0
	for round := range 300 {
		// Open, replace or close a few subscriptions.
		for range 1 + rng.IntN(8) {
			ci := rng.IntN(len(conns))
			subid := fmt.Sprintf("s%d", rng.IntN(12))
			if old := open[ci][subid]; old != nil {
				x.remove(old)
				delete(open[ci], subid)
			}
			if rng.IntN(4) == 0 {
				continue // closed
			}
			sub := &subscription{}
			for range 1 + rng.IntN(3) {
				sub.filters = append(sub.filters, randFilter())
			}
			x.add(conns[ci], subid, sub)
			open[ci][subid] = sub
		}
		for range 20 {
			evt := randEvent()
			var want []string
			for ci := range conns {
				for subid, sub := range open[ci] {
					if slices.ContainsFunc(sub.filters, func(f nostr.Filter) bool { return f.Matches(evt) }) {
						want = append(want, fmt.Sprintf("%d/%s", ci, subid))
					}
				}
			}
			var got []string
			for _, d := range x.match(evt) {
				got = append(got, fmt.Sprintf("%d/%s", slices.Index(conns, d.c), d.subid))
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: event %+v\nindex delivered %v\nevery filter says %v", round, evt, got, want)
			}
			matched += len(want)
			checked++
		}
	}
	if matched < checked {
		t.Fatalf("only %d matches over %d events: the random filters hardly match, the test proves little", matched, checked)
	}
	// Closing everything empties the index.
	for ci := range conns {
		for _, sub := range open[ci] {
			x.remove(sub)
		}
	}
	if len(x.byKey) != 0 || len(x.unfiled) != 0 {
		t.Fatalf("index not empty after every subscription closed: %d keys, %d unfiled", len(x.byKey), len(x.unfiled))
	}
}

// BenchmarkSubIndexMatch finds the subscriptions of a new issue among
// grasp-bench's live fan-out subscriptions (one in five follows every new
// issue, the others one of 40 repositories' issues and comments), through
// the index and by testing every filter, in the same run:
//
//	go test -run '^$' -bench SubIndexMatch ./core/gate/
func BenchmarkSubIndexMatch(b *testing.B) {
	for _, n := range []int{500, 5000} {
		x := newSubIndex()
		var all []*subscription
		conns := make([]*conn, n/50)
		for i := range conns {
			conns[i] = &conn{}
		}
		repo := func(i int) string { return fmt.Sprintf("30617:%064x:repo-%d", i, i) }
		since := nostr.Timestamp(1)
		for k := range n {
			f := nostr.Filter{Kinds: []int{1621}, Since: &since}
			if k%5 != 0 {
				f = nostr.Filter{Kinds: []int{1621, 1111}, Since: &since, Tags: nostr.TagMap{"a": {repo(k % 40)}}}
			}
			sub := &subscription{filters: []nostr.Filter{f}}
			x.add(conns[k%len(conns)], fmt.Sprintf("s%d", k), sub)
			all = append(all, sub)
		}
		evt := &nostr.Event{ID: fmt.Sprintf("%064x", 1), PubKey: fmt.Sprintf("%064x", 2), Kind: 1621, CreatedAt: 100,
			Tags: nostr.Tags{{"a", repo(7)}, {"p", fmt.Sprintf("%064x", 3)}, {"subject", "a bug"}}}
		want := len(x.match(evt))
		b.Run(fmt.Sprintf("subs=%d/index", n), func(b *testing.B) {
			for b.Loop() {
				if len(x.match(evt)) != want {
					b.Fatal("index result changed")
				}
			}
		})
		b.Run(fmt.Sprintf("subs=%d/every-filter", n), func(b *testing.B) {
			for b.Loop() {
				got := 0
				for _, sub := range all {
					for i := range sub.filters {
						if sub.filters[i].Matches(evt) {
							got++
							break
						}
					}
				}
				if got != want {
					b.Fatalf("every filter: %d matches, index %d", got, want)
				}
			}
		})
	}
}

// A REQ that races the end of its connection never leaves a subscription
// in the gate's index: once the connection is shutting down, subscribe
// refuses, and shutdown closes the ones opened before.
func TestSubscribeAfterShutdownLeavesIndexEmpty(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	c.sendJSON("REQ", "live", map[string]any{"kinds": []int{1}, "limit": 0})
	c.expect("EOSE")
	var gc *conn
	for _, x := range e.gate.snapshot() {
		gc = x
	}
	if gc == nil {
		t.Fatal("no connection in the gate")
	}
	gc.shutdown("test")
	if _, _, ok := gc.subscribe("late", []nostr.Filter{{Kinds: []int{1}}}); ok {
		t.Fatal("a connection that shut down took a new subscription")
	}
	e.gate.subs.mu.RLock()
	defer e.gate.subs.mu.RUnlock()
	if len(e.gate.subs.byKey) != 0 || len(e.gate.subs.unfiled) != 0 {
		t.Fatalf("index holds %d keys and %d unfiled filters after the only connection ended", len(e.gate.subs.byKey), len(e.gate.subs.unfiled))
	}
}
