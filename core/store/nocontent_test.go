package store

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// WithoutContent (issue 27 part 2): a query marked so returns the same
// events, in the same order, with every field but the content as stored —
// whether the content was inline, packed or in a content record of its own
// — and an unmarked query still returns the contents.
func TestWithoutContentReturnsEverythingButContents(t *testing.T) {
	testWithoutContent(t, openTest(t, Options{}))
}

func TestPostgresWithoutContent(t *testing.T) {
	testWithoutContent(t, openPostgresTest(t, Options{}))
}

func testWithoutContent(t *testing.T, s *Store) {
	sk := testKey(0)
	contents := []string{
		"short, kept in the record",
		strings.Repeat("a packed patch line\n", 100), // packed with zstd
		strings.Repeat("x", maxCodecContent+10),      // a content record of its own
		"",
	}
	var want []*nostr.Event
	for i, c := range contents {
		evt := signed(t, sk, 1617, nostr.Timestamp(1000+i), c, nostr.Tag{"a", "30617:" + strings.Repeat("ab", 32) + ":r"}, nostr.Tag{"t", "root"})
		mustSave(t, s.Events(), evt)
		want = append([]*nostr.Event{evt}, want...)
	}
	f := nostr.Filter{Kinds: []int{1617}}
	full := query(t, context.Background(), s.Events(), f)
	bare := query(t, WithoutContent(context.Background()), s.Events(), f)
	if len(full) != len(want) || len(bare) != len(want) {
		t.Fatalf("got %d events with contents and %d without, want %d", len(full), len(bare), len(want))
	}
	for i, w := range want {
		if full[i].Content != w.Content {
			t.Errorf("event %d: an unmarked query returned a content of %d bytes, want %d", i, len(full[i].Content), len(w.Content))
		}
		if bare[i].Content != "" {
			t.Errorf("event %d: a query without contents returned %q", i, bare[i].Content[:min(20, len(bare[i].Content))])
		}
		b := *bare[i]
		b.Content = w.Content
		if b.ID != w.ID || b.PubKey != w.PubKey || b.Sig != w.Sig || b.CreatedAt != w.CreatedAt || b.Kind != w.Kind || !slices.EqualFunc(b.Tags, w.Tags, slices.Equal) {
			t.Errorf("event %d without contents: %v, want %v", i, &b, w)
		}
	}
	// ids filters take their own path through the store.
	byID := query(t, WithoutContent(context.Background()), s.Events(), nostr.Filter{IDs: []string{want[1].ID}})
	if len(byID) != 1 || byID[0].ID != want[1].ID || byID[0].Content != "" {
		t.Errorf("ids query without contents returned %v", byID)
	}
}
