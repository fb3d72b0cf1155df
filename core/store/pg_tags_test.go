package store

import (
	"context"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// An event without tags must not break tag queries on PostgreSQL: its tags
// were stored as JSON null, and every query filtering by a tag then failed
// with "cannot extract elements from a scalar" (found by issue 27's
// PostgreSQL set test).
func TestPostgresEventWithoutTagsLeavesTagQueriesWorking(t *testing.T) {
	s := openPostgresTest(t, Options{})
	bare := signed(t, testKey(3), 1, 1000, "no tags at all")
	bare.Tags = nil
	mustSave(t, s.Events(), bare)
	tagged := signed(t, testKey(4), 1617, 1001, "patch", nostr.Tag{"a", "30617:x:y"})
	mustSave(t, s.Events(), tagged)
	got := query(t, context.Background(), s.Events(), nostr.Filter{Tags: nostr.TagMap{"a": {"30617:x:y"}}})
	if len(got) != 1 || got[0].ID != tagged.ID {
		t.Fatalf("#a query returned %d events, want the tagged one", len(got))
	}
	got = query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{bare.ID}})
	if len(got) != 1 || len(got[0].Tags) != 0 {
		t.Fatalf("the event without tags did not round-trip: %v", got)
	}
}
