package store

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

// An authors+kinds query with a limit reads one event record per event it
// returns, whatever the store holds: the plan walks the (author, kind)
// index, whose keys are exactly the events asked for, so nothing is read
// and filtered away, and six times more events by the same authors cost
// the query nothing more (issue 27 part 3: authors+kinds flat).
func TestQuery_AuthorsKindsReadsOneRecordPerResult(t *testing.T) {
	c := newScaleCorpus(12_000, 27)
	s, err := New(Options{Dir: t.TempDir(), UnsafeNoSync: true}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	bs := s.badger()
	const limit = 50
	kinds := []int{1111, 1621, 1617} // grasp-bench's authors+kinds query
	reads := func(size int) {
		t.Helper()
		for _, a := range c.authors[:6] {
			before := bs.recordReads.Load()
			got := query(t, context.Background(), s.Events(), nostr.Filter{Authors: []string{a}, Kinds: kinds, Limit: limit})
			n := bs.recordReads.Load() - before
			if len(got) != limit {
				t.Fatalf("%d events: author %s…: %d events, want the limit %d", size, a[:8], len(got), limit)
			}
			for _, e := range got {
				if e.PubKey != a || (e.Kind != 1111 && e.Kind != 1621 && e.Kind != 1617) {
					t.Fatalf("%d events: got %s (kind %d by %s…)", size, e.ID, e.Kind, e.PubKey[:8])
				}
			}
			if n != limit {
				t.Errorf("%d events: author %s…: %d records read for %d events", size, a[:8], n, len(got))
			}
		}
	}
	small := &scaleCorpus{evts: c.evts[:2_000]}
	small.fill(t, s)
	reads(2_000)
	rest := &scaleCorpus{evts: c.evts[2_000:]}
	rest.fill(t, s)
	reads(len(c.evts))
}
