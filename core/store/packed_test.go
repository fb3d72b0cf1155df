package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

// proseContent is NIP-34-like text of about n bytes: it compresses, as
// patches and issues do.
func proseContent(n, seed int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "+\tif err := repo.Fetch(ctx, %d); err != nil { // line %d of patch %d\n", i*seed, i, seed)
	}
	return b.String()[:n]
}

// A store written before packing (contents inline, records in the tree) is
// read as it was, also after events are saved the new way next to its
// own; duplicates of either kind are refused without leaving a content
// record; deleting a packed event removes its record.
func TestPackedContentReadsOldStores(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	// The store as an earlier grasp wrote it.
	old := openTest(t, Options{Dir: dir, noPack: true, ValueThreshold: maxValueThreshold})
	oldMid := signed(t, testKey(0), 1617, 1000, proseContent(2000, 1))
	oldShort := signed(t, testKey(0), 1111, 1001, "short comment")
	oldBig := bigPatch(t, testKey(0), 1002)
	mustSave(t, old.Events(), oldMid, oldShort, oldBig)
	if hasLargeRecord(t, old, oldMid.ID) {
		t.Fatal("a store without packing packed a content")
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s := openTest(t, Options{Dir: dir})
	for _, e := range []*nostr.Event{oldMid, oldShort, oldBig} {
		sameEvent(t, "an event of the old store", query(t, ctx, s.Events(), nostr.Filter{IDs: []string{e.ID}}), e)
	}
	newMid := signed(t, testKey(1), 1617, 1003, proseContent(3000, 2))
	newShort := signed(t, testKey(1), 1111, 1004, "another short one")
	newBig := bigPatch(t, testKey(1), 1005)
	mustSave(t, s.Events(), newMid, newShort, newBig)
	if !hasLargeRecord(t, s, newMid.ID) || !hasLargeRecord(t, s, newBig.ID) {
		t.Fatal("compressible contents saved now were not packed")
	}
	if hasLargeRecord(t, s, newShort.ID) {
		t.Fatal("a short content got a content record")
	}
	for _, e := range []*nostr.Event{oldMid, newMid} {
		if err := s.Events().SaveEvent(ctx, e); err != eventstore.ErrDupEvent {
			t.Fatalf("saving %s again: got %v, want ErrDupEvent", e.ID, err)
		}
	}
	if hasLargeRecord(t, s, oldMid.ID) {
		t.Fatal("a duplicate of an inline event left a content record")
	}
	check := func(s *Store) {
		t.Helper()
		all := query(t, ctx, s.Events(), nostr.Filter{Kinds: []int{1617, 1111}})
		if len(all) != 6 {
			t.Fatalf("by kind: %d events, want 6", len(all))
		}
		byID := map[string]*nostr.Event{}
		for _, e := range all {
			byID[e.ID] = e
		}
		for _, want := range []*nostr.Event{oldMid, oldShort, oldBig, newMid, newShort, newBig} {
			got := byID[want.ID]
			if got == nil || got.Content != want.Content || !got.CheckID() {
				t.Fatalf("event %s (kind %d, %d bytes of content) did not come back whole", want.ID, want.Kind, len(want.Content))
			}
		}
		if n, err := s.Events().CountEvents(ctx, nostr.Filter{Kinds: []int{1617}}); err != nil || n != 4 {
			t.Fatalf("count: %d %v, want 4", n, err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	check(s)
	if err := s.Events().DeleteEvent(ctx, newMid); err != nil {
		t.Fatal(err)
	}
	if hasLargeRecord(t, s, newMid.ID) {
		t.Fatal("deleting a packed event left its content record")
	}
	if got := query(t, ctx, s.Events(), nostr.Filter{IDs: []string{newMid.ID}}); len(got) != 0 {
		t.Fatal("deleted packed event still served")
	}
}

// Replacing an addressable event whose content is packed drops the record
// of the version it replaced, and an older version refused leaves none.
func TestPackedContentFollowsReplacement(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	v1 := signed(t, testKey(2), 30617, 1000, proseContent(1500, 3), nostr.Tag{"d", "repo"})
	v2 := signed(t, testKey(2), 30617, 1001, proseContent(1500, 4), nostr.Tag{"d", "repo"})
	older := signed(t, testKey(2), 30617, 999, proseContent(1500, 5), nostr.Tag{"d", "repo"})
	for _, v := range []*nostr.Event{v1, v2, older} {
		if err := s.Events().ReplaceEvent(ctx, v); err != nil {
			t.Fatalf("replace: %v", err)
		}
	}
	sameEvent(t, "the newest version", query(t, ctx, s.Events(), nostr.Filter{Kinds: []int{30617}}), v2)
	if hasLargeRecord(t, s, v1.ID) || hasLargeRecord(t, s, older.ID) {
		t.Fatal("a replaced or refused version kept its content record")
	}
	if !hasLargeRecord(t, s, v2.ID) {
		t.Fatal("the stored version has no content record")
	}
}

// Packing round-trips any content, and refuses what would not shrink.
func TestPackContent(t *testing.T) {
	for _, c := range []string{proseContent(300, 1), proseContent(70_000, 2), strings.Repeat("é\"\\\n", 500)} {
		rec := packContent(c)
		if rec == nil {
			t.Fatalf("%d bytes of text not packed", len(c))
		}
		got, err := unpackContent(rec)
		if err != nil || got != c {
			t.Fatalf("unpack: %v (same: %v)", err, got == c)
		}
	}
	random := nostr.GeneratePrivateKey() + nostr.GeneratePrivateKey() + nostr.GeneratePrivateKey() + nostr.GeneratePrivateKey() + nostr.GeneratePrivateKey()
	if rec := packContent(random[:300]); rec != nil && len(rec) > 300-300/8 {
		t.Fatalf("packed %d bytes of hex into %d", 300, len(rec))
	}
	if _, err := unpackContent([]byte{9, 1, 2}); err == nil {
		t.Fatal("an unknown format unpacked")
	}
}

func TestBenchTextPacksLikeTheCorpus(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := benchText(rng, 1200)
	rec := packContent(c)
	if len(rec) < 400 || len(rec) > 800 {
		t.Fatalf("benchText packs 1200 bytes into %d, want about half (grasp-bench's corpus: 0.56)", len(rec))
	}
}
