package visibility

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestRecordAllocationIndependentOfParentContent: recording a reply looks
// its parents up by id for their kind, author and tags only, so what Record
// allocates does not grow with the size of the parents' contents (issue 27
// part 5: decoding every parent's packed content cost ~30 µs an accepted
// event). Measured on the badger store, which honours store.WithoutContent.
func TestRecordAllocationIndependentOfParentContent(t *testing.T) {
	k := testkit.NewKey(t)
	addr := "30617:" + k.PK + ":repo"
	const n = 200
	perRecord := func(size int) float64 {
		st, err := store.New(store.Options{Dir: t.TempDir()}, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}()
		src, err := roster.New(roster.Options{Events: st.Events()}, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		v, err := New(Options{Records: &memkv.Privacy{}, Roster: src, Events: st.Events(), Hosted: hosted{}, Offered: true}, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		line := "+\tfmt.Println(\"a line of a patch that is not very different from the next\")\n"
		content := strings.Repeat(line, size/len(line)+1)[:size]
		var replies []*nostr.Event
		for i := range n {
			parent := k.Event(t, 1617, nostr.Timestamp(1_700_000_000+i), nostr.Tags{{"a", addr}, {"t", "root"}}, content)
			if err := st.Events().SaveEvent(ctx, parent); err != nil {
				t.Fatal(err)
			}
			replies = append(replies, k.Event(t, 1111, nostr.Timestamp(1_700_000_000+i), nostr.Tags{{"E", parent.ID}, {"e", parent.ID}, {"A", addr}}, "looks good"))
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, r := range replies {
			if err := v.Record(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	small, large := perRecord(300), perRecord(16000)
	t.Logf("Record allocates %.0f B per reply to parents of 300-byte contents, %.0f B to 16,000-byte contents", small, large)
	// Decoding the parent costs at least its 15,700 more bytes (and their
	// unpacking more); without it only the store's own goroutines' noise
	// differs.
	if large-small > 8000 {
		t.Fatalf("Record allocates %.0f B more per reply when the parent's content is 15,700 B longer: it decodes the parent's content", large-small)
	}
}
