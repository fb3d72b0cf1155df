package negindex

import (
	"math/rand"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// onePercentSession reconciles a client lacking every 100th of n events
// with the index's whole-store snapshot, with the frame limits of grasp's
// client towards a peer that refuses large frames (catchup's FrameLimit,
// 60,000) and of grasp's server (negentropy_frame_bytes 500,000),
// and returns the rounds and the ids each side added into fingerprints.
func onePercentSession(t testing.TB, n int) (rounds, clientAdded, serverAdded int) {
	r := rand.New(rand.NewSource(int64(n)))
	events := make([]Event, n)
	for i := range events {
		r.Read(events[i].ID[:])
		events[i].CreatedAt = uint32(1_700_000_000 + r.Intn(n*10))
	}
	ix := New(nil)
	ix.Load(events)
	server, _, err := ix.Select(nostr.Filter{}, n)
	if err != nil {
		t.Fatal(err)
	}
	b := NewSnapshotBuilder(n)
	for i, it := range server.Range(0, server.Size()) {
		if i%100 != 50 {
			b.Add(it.Timestamp, it.ID)
		}
	}
	client := b.Snapshot()
	cneg, sneg := negentropy.New(client, 60_000), negentropy.New(server, 500_000)
	learned := countHaveNots(cneg)
	msg := cneg.Start()
	for msg != "" {
		out, err := sneg.Reconcile(msg)
		if err != nil {
			t.Fatal(err)
		}
		rounds++
		if msg, err = cneg.Reconcile(out); err != nil {
			t.Fatal(err)
		}
		if rounds > 1000 {
			t.Fatal("reconciliation does not end")
		}
	}
	if k, want := <-learned, n-client.Size(); k != want {
		t.Fatalf("the client learned of %d missing events, want %d", k, want)
	}
	return rounds, client.added, server.added
}

// A session with 1 % missing does a bounded amount of fingerprint work on
// each side: every id is added into running sums once per side, and each
// range's fingerprint adds at most its edges (issue 27 part 3). With
// go-nostr's vector on the client, that side re-added its whole set each
// round (91 rounds at 1,000,000 events: 12 s of CPU). The rounds grow with
// the differences over the client's frame limit (the client's id lists are
// the bulk of what it sends), not faster.
func TestOnePercentMissingWorkIsBounded(t *testing.T) {
	for _, n := range []int{10_000, 40_000} {
		rounds, clientAdded, serverAdded := onePercentSession(t, n)
		t.Logf("%d events: %d rounds, ids added into fingerprints: client %d (%.2f per event), server %d (%.2f)",
			n, rounds, clientAdded, float64(clientAdded)/float64(n), serverAdded, float64(serverAdded)/float64(n))
		if clientAdded > 3*n || serverAdded > 3*n {
			t.Errorf("%d events: client added %d ids, server %d; want at most %d each", n, clientAdded, serverAdded, 3*n)
		}
		// 32 bytes per id of the client's ~n/8 ids in differing leaf
		// ranges, over 60,000-byte frames, plus the descents: ~n/10,000+4.
		if max := n/5_000 + 8; rounds > max {
			t.Errorf("%d events: %d rounds, want at most %d", n, rounds, max)
		}
	}
}

// countHaveNots drains a client engine's Haves and counts its HaveNots: how
// many events the client learned it lacks arrives once the session ends.
func countHaveNots(cneg *negentropy.Negentropy) <-chan int {
	go func() {
		for range cneg.Haves {
		}
	}()
	learned := make(chan int, 1)
	go func() {
		k := 0
		for range cneg.HaveNots {
			k++
		}
		learned <- k
	}()
	return learned
}
