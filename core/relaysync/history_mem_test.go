package relaysync

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Issue 27 part 2: at start-up the self-subscriber reads every stored root
// event and reply (most of an archive: 1617/1621 and 1111 are ~90 % of the
// million-event corpus) and keeps ids, authors and a few tags of each. It
// read them with their contents unpacked — 3.2 GB allocated at a million
// events, mostly patch contents, for fields sync never looks at. The
// replay's allocation per root event must not depend on how large the
// events' contents are: the same patches with 300-byte and 8,000-byte
// contents, read from a real store in the same run.
func TestReplayAllocationIndependentOfContentSize(t *testing.T) {
	m, err := NewManager(Options{Conns: &fakeConns{}, Health: &fakeHealth{}, Self: []string{selfURL}, Rand: func() float64 { return 0.5 }}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	k := testkit.NewKey(t)
	addr := "30617:" + k.PK + ":repo"
	const n = 600
	perEvent := func(size int) float64 {
		st, err := store.New(store.Options{Dir: t.TempDir()}, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		}()
		// A patch's content compresses (the store packs it, as it packs
		// real patches).
		line := "+\tfmt.Println(\"a line of a patch that is not very different from the next\")\n"
		for i := range n {
			content := strings.Repeat(line, size/len(line)+1)[:size]
			evt := k.Event(t, 1617, nostr.Timestamp(1_700_000_000+i), nostr.Tags{{"a", addr}, {"p", k.PK}, {"t", "root"}}, content)
			if err := st.Events().SaveEvent(context.Background(), evt); err != nil {
				t.Fatal(err)
			}
		}
		roots := 0
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err = replayHistory(context.Background(), st.Events(), syncKinds(), func(evt *nostr.Event) {
			if u, ok := m.parse(evt); ok && u.id != "" {
				roots++
			}
		})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if roots != n {
			t.Fatalf("replay saw %d root events, want %d", roots, n)
		}
		return float64(after.TotalAlloc-before.TotalAlloc) / n
	}
	small, large := perEvent(300), perEvent(8000)
	t.Logf("replay allocates %.0f B per root event with 300-byte contents, %.0f B with 8,000-byte contents", small, large)
	// Reading the contents costs at least their 7,700 more bytes each
	// (their unpacking more): ~5× here. Without them only the sampling
	// noise of a run (the store's own goroutines) differs.
	if large > 1.25*small {
		t.Errorf("replay allocates %.0f B per root event with 8,000-byte contents, %.0f B with 300-byte ones: it reads the contents", large, small)
	}
}

// Issue 27 part 2: a batch of observed events is handed to the actor once
// it holds maxObserved updates, without waiting for its window: the
// start-up replay observes a whole archive in seconds, and each update
// holds its decoded event's strings until applied (~230 MB in a 5-second
// window at a million events). The fake clock never moves here.
func TestObservedBatchBoundedWithoutItsWindow(t *testing.T) {
	h := newHarness(t, nil)
	h.m.Observe(announcement(0, selfURL, r1))
	const n = 2*maxObserved + maxObserved/2
	for i := range n {
		h.m.Observe(rootEvent(1617, i+1, 0))
	}
	snap, err := h.m.Snapshot(testwait.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	// Two full batches (the first with the announcement) are applied; the
	// rest waits for its window.
	if want := 2*maxObserved - 1; snap.RootEvents != want {
		t.Errorf("%d root events applied before the window ended, want %d", snap.RootEvents, want)
	}
}
