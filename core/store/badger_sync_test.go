package store

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

// With ParallelLogSync the value log and the WALs are synced by two
// goroutines at once (issue 27 part 4): every commit that wrote a record to
// the value log still syncs both logs' newest files, and every
// acknowledged event reads back after a reopen. Under -race this also
// checks that the two log sets share no state.
func TestParallelLogSyncSyncsBothLogs(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, ParallelLogSync: true}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	b := s.badger()
	var mu sync.Mutex
	vlogCommits := 0
	b.w.syncFn = func(vlog bool) error {
		if vlog {
			mu.Lock()
			vlogCommits++
			mu.Unlock()
		}
		return b.syncDurable(vlog)
	}
	sk := nostr.GeneratePrivateKey()
	evts := make([]*nostr.Event, 64)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range evts {
		evts[i] = benchEvent(t, sk, i)
		// patch-like text: packed, its content record and event record
		// both go to the value log
		evts[i].Content = benchText(rng, 1500)
		if err := evts[i].Sign(sk); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(evts); i += 4 {
				if err := s.Events().SaveEvent(context.Background(), evts[i]); err != nil {
					t.Errorf("save %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	if vlogCommits == 0 {
		t.Fatal("no commit synced the value log: the records did not go there")
	}
	mu.Unlock()
	for _, l := range []*logSet{b.wals.vlog, b.wals.wal} {
		synced := false
		for name := range l.files {
			synced = synced || strings.HasSuffix(name, l.suffix)
		}
		if !synced {
			t.Fatalf("no %s file was synced", l.what)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, Options{Dir: dir})
	for _, e := range evts {
		got := query(t, context.Background(), s2.Events(), nostr.Filter{IDs: []string{e.ID}})
		if len(got) != 1 || got[0].Content != e.Content {
			t.Fatalf("event %s after reopen: %d found", e.ID, len(got))
		}
	}
}
