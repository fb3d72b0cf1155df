package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
)

// TestQueriesMatchABruteForceMatcher is a differential test in the manner of
// strfry's filter fuzzer: random filters run through the store and through
// nostr.Filter.Matches over every event, newest first, cut at the limit the
// store promises.
func TestQueriesMatchABruteForceMatcher(t *testing.T) {
	testQueriesMatchBruteForce(t, openTest(t, Options{Limits: config.Limits{MaxLimit: 40, DefaultLimit: 15}, UnsafeNoSync: true}))
}

// testQueriesMatchBruteForce needs a store with MaxLimit 40, DefaultLimit 15.
func testQueriesMatchBruteForce(t *testing.T, s *Store) {
	r := rand.New(rand.NewPCG(34, 77))
	var pubkeys []string
	for k := range 4 {
		pk, _ := nostr.GetPublicKey(testKey(k))
		pubkeys = append(pubkeys, pk)
	}
	kinds := []int{1, 7, 1617, 1621}
	tValues := []string{"git", "nostr", "grasp"}
	eValues := []string{strings.Repeat("e1", 32), strings.Repeat("e2", 32), strings.Repeat("e3", 32)}
	aValues := []string{"30617:" + pubkeys[0] + ":repo-a", "30617:" + pubkeys[1] + ":repo-b"}
	pick := func(vs []string) string { return vs[r.IntN(len(vs))] }

	// Distinct created_at values keep "newest first" a total order.
	stamps := r.Perm(2000)
	var all []*nostr.Event
	for i := range 300 {
		var tags nostr.Tags
		if r.IntN(2) == 0 {
			tags = append(tags, nostr.Tag{"t", pick(tValues)})
		}
		if r.IntN(3) == 0 {
			tags = append(tags, nostr.Tag{"e", pick(eValues)})
		}
		if r.IntN(3) == 0 {
			tags = append(tags, nostr.Tag{"a", pick(aValues)})
		}
		k := r.IntN(4)
		e := signed(t, testKey(k), kinds[r.IntN(len(kinds))], nostr.Timestamp(10_000+stamps[i]), fmt.Sprint("n", i), tags...)
		mustSave(t, s.Events(), e)
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *nostr.Event) int { return int(b.CreatedAt - a.CreatedAt) })

	for round := range 250 {
		var f nostr.Filter
		if r.IntN(4) == 0 {
			f.Authors = []string{pick(pubkeys)}
			if r.IntN(2) == 0 {
				f.Authors = append(f.Authors, pick(pubkeys))
			}
		}
		if r.IntN(2) == 0 {
			f.Kinds = []int{kinds[r.IntN(len(kinds))]}
			if r.IntN(2) == 0 {
				f.Kinds = append(f.Kinds, kinds[r.IntN(len(kinds))])
			}
		}
		if r.IntN(3) == 0 {
			f.Tags = nostr.TagMap{}
			switch r.IntN(3) {
			case 0:
				f.Tags["t"] = []string{pick(tValues)}
			case 1:
				f.Tags["e"] = []string{pick(eValues), pick(eValues)}
			default:
				f.Tags["a"] = []string{pick(aValues)}
			}
		}
		if r.IntN(4) == 0 {
			since := nostr.Timestamp(10_000 + r.IntN(2000))
			f.Since = &since
		}
		if r.IntN(4) == 0 {
			until := nostr.Timestamp(10_000 + r.IntN(2000))
			f.Until = &until
		}
		if r.IntN(8) == 0 {
			for range 1 + r.IntN(3) {
				f.IDs = append(f.IDs, all[r.IntN(len(all))].ID)
			}
		}
		want := 15
		if r.IntN(3) > 0 {
			f.Limit = 1 + r.IntN(60)
			want = min(f.Limit, 40)
		}

		var expected []string
		for _, e := range all {
			if f.Matches(e) && len(expected) < want {
				expected = append(expected, e.ID)
			}
		}
		var got []string
		for _, e := range query(t, context.Background(), s.Events(), f) {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, expected) {
			t.Fatalf("round %d, filter %v:\n got %d events %v\nwant %d events %v", round, f, len(got), short(got), len(expected), short(expected))
		}
	}
}

func short(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:8]
	}
	return out
}
