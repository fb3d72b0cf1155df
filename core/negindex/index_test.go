package negindex

import (
	"encoding/hex"
	"math/rand"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// A session served from a Snapshot must say, message for message, what the
// same session served from go-nostr's vector says: same fingerprints, same
// bounds, same id lists. The client holds a random subset plus ids of its own.
func TestSnapshotSpeaksLikeVector(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for round := range 20 {
		ix := New(nil)
		server := vector.New()
		client := vector.New()
		n := 1 + r.Intn(3000)
		for range n {
			var e Event
			r.Read(e.ID[:])
			r.Read(e.PubKey[:])
			e.CreatedAt = uint32(1000 + r.Intn(n/3+1)) // ties
			ix.Add(e)
			id := hex.EncodeToString(e.ID[:])
			server.Insert(nostr.Timestamp(e.CreatedAt), id)
			if r.Intn(10) != 0 {
				client.Insert(nostr.Timestamp(e.CreatedAt), id)
			}
		}
		for range r.Intn(50) {
			var id [32]byte
			r.Read(id[:])
			client.Insert(nostr.Timestamp(1000+r.Intn(n)), hex.EncodeToString(id[:]))
		}
		server.Seal()
		client.Seal()
		snap, ok, err := ix.Select(nostr.Filter{}, n)
		if !ok || err != nil {
			t.Fatalf("select all: ok %v err %v", ok, err)
		}
		if snap.Size() != server.Size() {
			t.Fatalf("round %d: snapshot holds %d, vector %d", round, snap.Size(), server.Size())
		}
		frame := 4096 * (1 + r.Intn(4))
		c := negentropy.New(client, frame)
		go func() {
			for range c.Haves {
			}
		}()
		go func() {
			for range c.HaveNots {
			}
		}()
		viaVec := negentropy.New(server, frame)
		viaSnap := negentropy.New(snap, frame)
		msg := c.Start()
		for step := 0; msg != ""; step++ {
			a, errA := viaVec.Reconcile(msg)
			b, errB := viaSnap.Reconcile(msg)
			if errA != nil || errB != nil {
				t.Fatalf("round %d step %d: %v / %v", round, step, errA, errB)
			}
			if a != b {
				t.Fatalf("round %d step %d: the snapshot answers differently from the vector", round, step)
			}
			if msg, err = c.Reconcile(a); err != nil {
				t.Fatal(err)
			}
			if step > 100 {
				t.Fatal("reconciliation does not end")
			}
		}
	}
}

// Inserting out of order across block splits, removing, and adding again
// keep the entries sorted and counted.
func TestIndexKeepsOrderAcrossBlocks(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	ix := New(nil)
	var all []Event
	for range 5 * blockSize {
		var e Event
		r.Read(e.ID[:])
		e.CreatedAt = uint32(r.Intn(2000))
		ix.Add(e)
		ix.Add(e) // again: no change
		all = append(all, e)
	}
	for i := 0; i < len(all); i += 3 {
		ix.Remove(all[i])
		ix.Remove(all[i])
	}
	want := len(all) - (len(all)+2)/3
	if ix.Len() != want {
		t.Fatalf("Len %d, want %d", ix.Len(), want)
	}
	snap, _, _ := ix.Select(nostr.Filter{}, len(all))
	if snap.Size() != want {
		t.Fatalf("snapshot %d, want %d", snap.Size(), want)
	}
	for i := 1; i < snap.Size(); i++ {
		if compareItems(snap.items[i-1], snap.items[i]) >= 0 {
			t.Fatalf("items %d and %d out of order", i-1, i)
		}
	}
	// Load from scratch gives the same set.
	fresh := New(nil)
	var kept []Event
	for i, e := range all {
		if i%3 != 0 {
			kept = append(kept, e)
		}
	}
	fresh.Load(kept)
	again, _, _ := fresh.Select(nostr.Filter{}, len(all))
	if got, w := again.IDs(), snap.IDs(); len(got) != len(w) {
		t.Fatalf("loaded %d, built %d", len(got), len(w))
	} else {
		for i := range got {
			if got[i] != w[i] {
				t.Fatalf("loaded and built indexes differ at %d", i)
			}
		}
	}
}
