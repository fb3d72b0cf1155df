package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore"
	ebadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

// bigPatch is a NIP-34 patch whose content is a 1 MiB diff with the bytes
// JSON and the codec care about (newlines, quotes, backslashes, non-ASCII).
func bigPatch(t testing.TB, sk string, created nostr.Timestamp) *nostr.Event {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString("+\tfmt.Println(\"line \\\\ ")
		b.WriteString(strings.Repeat("é", i%7))
		b.WriteString("\")\n")
	}
	content := b.String()[:1<<20]
	return signed(t, sk, 1617, created, content,
		nostr.Tag{"a", "30617:" + strings.Repeat("ab", 32) + ":grasp"},
		nostr.Tag{"commit-pgp-sig", strings.Repeat("s", 8<<10)})
}

// hasLargeRecord reports whether the store holds a content record of
// either kind (large or packed) for id.
func hasLargeRecord(t *testing.T, s *Store, id string) bool {
	t.Helper()
	found := false
	for _, prefix := range []byte{largePrefix, packedPrefix} {
		k, err := contentKey(prefix, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.badger().db.View(func(txn *badger.Txn) error {
			_, err := txn.Get(k)
			found = found || err == nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return found
}

func sameEvent(t *testing.T, what string, got []*nostr.Event, want *nostr.Event) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%s: %d events, want 1", what, len(got))
	}
	if got[0].Content != want.Content || got[0].ID != want.ID || !got[0].CheckID() {
		t.Fatalf("%s: content of %d bytes came back as %d bytes (id ok: %v)", what, len(want.Content), len(got[0].Content), got[0].CheckID())
	}
	if ok, err := got[0].CheckSignature(); !ok || err != nil {
		t.Fatalf("%s: signature does not verify: %v", what, err)
	}
}

// A patch of 1 MiB, beyond the badger codec's 16-bit content length, is
// stored, found by every kind of query, counted, reconciled, and comes back
// byte-identical, also after the store is reopened.
func TestLargeEventRoundTripsAndSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := bigPatch(t, testKey(0), 1000)
	small := signed(t, testKey(0), 1617, 999, "a small patch", nostr.Tag{"a", "30617:" + strings.Repeat("ab", 32) + ":grasp"})
	mustSave(t, s.Events(), p, small)
	if err := s.Events().SaveEvent(ctx, p); err != eventstore.ErrDupEvent {
		t.Fatalf("saving it again: got %v, want ErrDupEvent", err)
	}
	check := func(s *Store) {
		sameEvent(t, "by id", query(t, ctx, s.Events(), nostr.Filter{IDs: []string{p.ID}}), p)
		sameEvent(t, "by tag", query(t, ctx, s.Events(), nostr.Filter{Tags: nostr.TagMap{"a": {"30617:" + strings.Repeat("ab", 32) + ":grasp"}}, Until: &p.CreatedAt, Since: &p.CreatedAt}), p)
		both := query(t, ctx, s.Events(), nostr.Filter{Kinds: []int{1617}})
		if len(both) != 2 || both[0].ID != p.ID || both[1].Content != small.Content {
			t.Fatalf("by kind: got %d events", len(both))
		}
		neg := query(t, eventstore.SetNegentropy(ctx), s.Events(), nostr.Filter{Authors: []string{p.PubKey}})
		if len(neg) != 2 {
			t.Fatalf("negentropy query: %d events, want 2", len(neg))
		}
		if n, err := s.Events().CountEvents(ctx, nostr.Filter{Kinds: []int{1617}}); err != nil || n != 2 {
			t.Fatalf("count: %d %v, want 2", n, err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	check(s)
}

// Deleting a large event removes its content too; replacing one leaves an
// orphaned content record that maintenance removes; a content record left
// by a crash between the two writes is removed the same way.
func TestLargeEventDeleteReplaceAndSweep(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	p := bigPatch(t, testKey(1), 1000)
	mustSave(t, s.Events(), p)
	if !hasLargeRecord(t, s, p.ID) {
		t.Fatal("no content record after save")
	}
	if err := s.Events().DeleteEvent(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := query(t, ctx, s.Events(), nostr.Filter{IDs: []string{p.ID}}); len(got) != 0 {
		t.Fatal("deleted large event still served")
	}
	if hasLargeRecord(t, s, p.ID) {
		t.Fatal("deleting the event left its content")
	}

	big := strings.Repeat("x", 200_000)
	v1 := signed(t, testKey(1), 30617, 1000, big, nostr.Tag{"d", "repo"})
	v2 := signed(t, testKey(1), 30617, 1001, big+"2", nostr.Tag{"d", "repo"})
	for _, v := range []*nostr.Event{v1, v2} {
		if err := s.Events().ReplaceEvent(ctx, v); err != nil {
			t.Fatalf("replace: %v", err)
		}
	}
	sameEvent(t, "replacement", query(t, ctx, s.Events(), nostr.Filter{Kinds: []int{30617}}), v2)
	// A newer version stored, an older one refused: neither leaves the
	// wrong content behind.
	if err := s.Events().ReplaceEvent(ctx, v1); err != nil {
		t.Fatalf("older replace: %v", err)
	}
	sameEvent(t, "after an older replace", query(t, ctx, s.Events(), nostr.Filter{Kinds: []int{30617}}), v2)

	crashed := bigPatch(t, testKey(2), 2000)
	if err := s.badger().putLarge(crashed.ID, []byte(crashed.Content)); err != nil {
		t.Fatal(err)
	}
	if err := s.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if hasLargeRecord(t, s, v1.ID) || hasLargeRecord(t, s, crashed.ID) {
		t.Fatal("maintenance kept orphaned content records")
	}
	if !hasLargeRecord(t, s, v2.ID) {
		t.Fatal("maintenance removed the content of a stored event")
	}
	sameEvent(t, "after maintenance", query(t, ctx, s.Events(), nostr.Filter{IDs: []string{v2.ID}}), v2)
}

// A store written before large events existed has no content records:
// queries hand out the backend's channel untouched. An event whose real
// content is the stub text is served as it is.
func TestLargeEventsLeaveOrdinaryStoresAlone(t *testing.T) {
	dir := t.TempDir()
	// A data directory as an earlier grasp wrote it: the backend alone.
	old := &ebadger.BadgerBackend{Path: filepath.Join(dir, "store")}
	if err := old.Init(); err != nil {
		t.Fatal(err)
	}
	before := signed(t, testKey(3), 1, 999, strings.Repeat("o", maxCodecContent))
	if err := old.SaveEvent(context.Background(), before); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s := openTest(t, Options{Dir: dir})
	sameEvent(t, "an event of an earlier store", query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{before.ID}}), before)
	e := signed(t, testKey(3), 1, 1000, largeStub)
	mustSave(t, s.Events(), e)
	if s.badger().hasLarge.Load() {
		t.Fatal("an ordinary save marked the store as holding large contents")
	}
	sameEvent(t, "stub-looking content", query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{e.ID}}), e)
	mustSave(t, s.Events(), bigPatch(t, testKey(3), 1001))
	sameEvent(t, "stub-looking content next to a large event", query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{e.ID}}), e)
}
