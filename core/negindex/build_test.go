package negindex

import (
	"encoding/hex"
	"math/rand"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// A client reconciling from a built Snapshot (core/relaysync/catchup) says,
// message for message, what the same client says from go-nostr's vector,
// and learns the same ids, against a server on the vector; the pairs are
// given out of order and some twice.
func TestBuiltSnapshotSpeaksLikeVectorAsClient(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	for round := range 20 {
		n := 1 + r.Intn(4000)
		server := vector.New()
		clientVec := vector.New()
		b := NewSnapshotBuilder(0)
		for range n {
			var id [32]byte
			r.Read(id[:])
			ts := nostr.Timestamp(1000 + r.Intn(n/3+1)) // ties
			h := hex.EncodeToString(id[:])
			if r.Intn(10) != 0 {
				server.Insert(ts, h)
			}
			if r.Intn(10) != 0 {
				clientVec.Insert(ts, h)
				if !b.Add(ts, h) {
					t.Fatal("a valid pair was refused")
				}
				if r.Intn(50) == 0 {
					b.Add(ts, h) // again: kept once
				}
			}
		}
		server.Seal()
		clientVec.Seal()
		snap := b.Snapshot()
		if snap.Size() != clientVec.Size() {
			t.Fatalf("round %d: snapshot holds %d, vector %d", round, snap.Size(), clientVec.Size())
		}
		frame := 4096 * (1 + r.Intn(4))
		viaVec, viaSnap := negentropy.New(clientVec, frame), negentropy.New(snap, frame)
		learned := func(neg *negentropy.Negentropy) func() (int, int) {
			haves, haveNots := make(chan int), make(chan int)
			count := func(ch chan string, out chan int) {
				k := 0
				for range ch {
					k++
				}
				out <- k
			}
			go count(neg.Haves, haves)
			go count(neg.HaveNots, haveNots)
			return func() (int, int) { return <-haves, <-haveNots }
		}
		vecLearned, snapLearned := learned(viaVec), learned(viaSnap)
		srv := negentropy.New(server, frame)
		a, c := viaVec.Start(), viaSnap.Start()
		for step := 0; ; step++ {
			if a != c {
				t.Fatalf("round %d step %d: the snapshot client says something else than the vector client", round, step)
			}
			if a == "" {
				break
			}
			out, err := srv.Reconcile(a)
			if err != nil {
				t.Fatal(err)
			}
			if a, err = viaVec.Reconcile(out); err != nil {
				t.Fatal(err)
			}
			if c, err = viaSnap.Reconcile(out); err != nil {
				t.Fatal(err)
			}
			if step > 200 {
				t.Fatal("reconciliation does not end")
			}
		}
		h1, n1 := vecLearned()
		h2, n2 := snapLearned()
		if h1 != h2 || n1 != n2 {
			t.Fatalf("round %d: vector client learned %d/%d, snapshot client %d/%d", round, h1, n1, h2, n2)
		}
	}
}

// What no Snapshot holds is refused, not mangled: uppercase or short ids,
// created_at outside 32 bits.
func TestSnapshotBuilderRefusesWhatNoStoreHolds(t *testing.T) {
	b := NewSnapshotBuilder(0)
	id := strings.Repeat("ab", 32)
	for _, c := range []struct {
		ts nostr.Timestamp
		id string
	}{{1, strings.ToUpper(id)}, {1, id[:62]}, {1, id + "00"}, {-1, id}, {1 << 32, id}, {1, strings.Repeat("zz", 32)}} {
		if b.Add(c.ts, c.id) {
			t.Errorf("Add(%d, %q) was accepted", c.ts, c.id)
		}
	}
	if !b.Add(0xffffffff, id) {
		t.Error("the largest created_at was refused")
	}
	if s := b.Snapshot(); s.Size() != 1 {
		t.Fatalf("snapshot holds %d pairs, want 1", s.Size())
	}
}

// FindLowerBound orders as negentropy.ItemCompare does for every bound: a
// prefix, a full id, an empty id, and ids that are not lowercase hex
// (compared as strings, as the vector does).
func TestSnapshotFindLowerBoundOrdersLikeVector(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	b := NewSnapshotBuilder(0)
	v := vector.New()
	for range 500 {
		var id [32]byte
		r.Read(id[:])
		id[0] &= 0x0f // many share a first byte
		ts := nostr.Timestamp(r.Intn(20))
		b.Add(ts, hex.EncodeToString(id[:]))
		v.Insert(ts, hex.EncodeToString(id[:]))
	}
	v.Seal()
	snap := b.Snapshot()
	for range 2000 {
		var id [32]byte
		r.Read(id[:])
		id[0] &= 0x0f
		h, ts := hex.EncodeToString(id[:]), nostr.Timestamp(r.Intn(21))
		if r.Intn(2) == 0 { // a prefix of a held pair, or the pair itself
			held := snap.items[r.Intn(snap.Size())]
			h, ts = hex.EncodeToString(held.id[:]), nostr.Timestamp(held.ts)
		}
		bound := negentropy.Bound{Item: negentropy.Item{Timestamp: ts, ID: h[:2*r.Intn(33)]}}
		switch r.Intn(6) {
		case 0:
			bound.ID = strings.ToUpper(bound.ID)
		case 1:
			bound.ID = h[:1+2*r.Intn(32)] // odd length
		case 2:
			bound.ID += "zz"
		}
		lo := r.Intn(snap.Size() + 1)
		hi := lo + r.Intn(snap.Size()-lo+1)
		if got, want := snap.FindLowerBound(lo, hi, bound), v.FindLowerBound(lo, hi, bound); got != want {
			t.Fatalf("FindLowerBound(%d, %d, %+v) = %d, the vector says %d", lo, hi, bound, got, want)
		}
	}
}
