package negindex

import (
	"math/rand"
	"sync"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// Whole-store sessions opened while the index does not change share one
// copy of the pairs and of their running sums (36 MB and ~45 ms of CPU
// each at 1,000,000 events; issue 27 part 3); a change makes the next
// session's set afresh, and filtered sessions never share.
func TestWholeStoreSessionsShareOneSet(t *testing.T) {
	events := corpusLikeEvents(2000)
	ix := New(nil)
	ix.Load(events)
	s1, _, err := ix.Select(nostr.Filter{}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, _ := ix.Select(nostr.Filter{}, 10_000)
	if s1.visited != 2000 || s2.visited != 0 || s2.sh != s1.sh {
		t.Fatalf("second whole-store select visited %d entries (first %d), shares the set: %v; want 0, 2000, true", s2.visited, s1.visited, s2.sh == s1.sh)
	}
	if _, _, err := ix.Select(nostr.Filter{}, 1999); err != ErrTooMany {
		t.Fatalf("a shared set larger than max: err %v, want ErrTooMany", err)
	}
	var e Event
	rand.New(rand.NewSource(5)).Read(e.ID[:])
	e.CreatedAt = 1_700_000_001
	ix.Add(e)
	s3, _, _ := ix.Select(nostr.Filter{}, 10_000)
	if s3.sh == s1.sh || s3.visited != 2001 || s3.Size() != 2001 {
		t.Fatalf("after a change: shares %v, visited %d, size %d; want a fresh set of 2001", s3.sh == s1.sh, s3.visited, s3.Size())
	}
	if s1.Size() != 2000 {
		t.Fatalf("an open session's set changed size to %d", s1.Size())
	}
	since := nostr.Timestamp(1)
	f1, _, _ := ix.Select(nostr.Filter{Since: &since}, 10_000)
	f2, _, _ := ix.Select(nostr.Filter{Since: &since}, 10_000)
	if f1.sh == f2.sh || f2.visited == 0 {
		t.Fatal("filtered sessions share a set")
	}
}

// Sessions on one shared set run at the same time and each answers as
// the set says: the running sums are made once, by whichever asks first
// (go test -race checks the sharing).
func TestSharedSetServesConcurrentSessions(t *testing.T) {
	ix := New(nil)
	ix.Load(corpusLikeEvents(20_000))
	ref, _, _ := ix.Select(nostr.Filter{}, 100_000)
	b := NewSnapshotBuilder(ref.Size())
	for i, it := range ref.Range(0, ref.Size()) {
		if i%50 != 7 {
			b.Add(it.Timestamp, it.ID)
		}
	}
	client := b.Snapshot()
	want := ref.Size() - client.Size()
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _, _ := ix.Select(nostr.Filter{}, 100_000)
			if s.sh != ref.sh {
				errs <- "a session did not get the shared set"
				return
			}
			// a client of its own: the engine's channels are per session
			cs := &Snapshot{items: client.items, sh: client.sh}
			cneg, sneg := negentropy.New(cs, 60_000), negentropy.New(s, 500_000)
			learned := countHaveNots(cneg)
			msg := cneg.Start()
			for msg != "" {
				out, err := sneg.Reconcile(msg)
				if err != nil {
					errs <- err.Error()
					return
				}
				if msg, err = cneg.Reconcile(out); err != nil {
					errs <- err.Error()
					return
				}
			}
			if k := <-learned; k != want {
				errs <- "a session learned a different set"
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
