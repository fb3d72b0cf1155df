package nocontent

import (
	"context"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// countingStore answers ids queries from a map and counts what it is asked.
type countingStore struct {
	evs     map[string]*nostr.Event
	queries int
	asked   []string
	plain   bool // a query without the no-contents mark
}

func (s *countingStore) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	s.queries++
	s.asked = append(s.asked, f.IDs...)
	if !Asked(ctx) {
		s.plain = true
	}
	ch := make(chan *nostr.Event, len(f.IDs))
	for _, id := range f.IDs {
		if e, ok := s.evs[id]; ok {
			ch <- e
		}
	}
	close(ch)
	return ch, nil
}

func ids(evs []*nostr.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

// TestByIDSharedAsksEachIDOnce: under Shared, the second reader of the same
// ids (GRASP-08's record after policy's reference rule) is answered without
// asking the store, an id found missing is not asked again, only new ids
// are queried, and every answer is what a query of its own would give.
// Without Shared, or for another store, every call queries.
func TestByIDSharedAsksEachIDOnce(t *testing.T) {
	a, b := &nostr.Event{ID: "aa", Kind: 1621}, &nostr.Event{ID: "bb", Kind: 1}
	s := &countingStore{evs: map[string]*nostr.Event{"aa": a, "bb": b}}
	ctx := Shared(context.Background())
	check := func(ask []string, limit int, want ...string) {
		t.Helper()
		got, err := ByID(ctx, s, ask, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), want) {
			t.Fatalf("ByID(%v, %d) = %v, want %v", ask, limit, ids(got), want)
		}
	}
	check([]string{"aa", "zz"}, 0, "aa")
	check([]string{"zz", "aa", "aa"}, 0, "aa")
	if s.queries != 1 {
		t.Fatalf("the store was queried %d times for ids already asked, want 1", s.queries)
	}
	check([]string{"bb", "aa", "zz"}, 0, "bb", "aa")
	check([]string{"bb", "aa"}, 1, "bb")
	if s.queries != 2 || !slices.Equal(s.asked, []string{"aa", "zz", "bb"}) {
		t.Fatalf("%d queries asking %v, want 2 asking [aa zz bb]", s.queries, s.asked)
	}
	if s.plain {
		t.Fatal("a lookup read contents: every ByID query must carry the no-contents mark")
	}

	other := &countingStore{evs: map[string]*nostr.Event{"aa": a}}
	if got, _ := ByID(ctx, other, []string{"aa", "bb"}, 0); !slices.Equal(ids(got), []string{"aa"}) || other.queries != 1 {
		t.Fatalf("another store was answered from the first one's memo: %v after %d queries", ids(got), other.queries)
	}

	plain := context.Background()
	before := s.queries
	ByID(plain, s, []string{"aa"}, 0) //nolint:errcheck // counted below
	ByID(plain, s, []string{"aa"}, 0) //nolint:errcheck // counted below
	if s.queries != before+2 {
		t.Fatalf("without Shared each call must query: %d queries, want 2", s.queries-before)
	}
}
