package negindex

import (
	"math/rand"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// The snapshot's fingerprints, from running sums (issue 27 part 3), equal
// go-nostr's vector's over every kind of range: short ones summed
// directly, long ones from the sums with both edges off a step, ranges
// starting at 0 and ending at the end. (Random ids: go-nostr's Accumulator drops a carry when a
// 32-bit limb of both the sum and the id is all ones with a carry in, which
// real ids reach with a probability of about 2^-64 per add; the sums here are
// exact modulo 2^256, as NIP-77 says.)
func TestSnapshotFingerprintsEqualVector(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, n := range []int{0, 1, sumStep - 1, sumStep, 4*sumStep + 1, 1000, 4096 + 17} {
		events := make([]Event, n)
		for i := range events {
			r.Read(events[i].ID[:])
			events[i].CreatedAt = uint32(1_700_000_000 + r.Intn(n+1))
			events[i].Kind = 1
		}
		ix := New(nil)
		ix.Load(events)
		snap, ok, err := ix.Select(nostr.Filter{}, n+1)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		v := vector.New()
		for _, it := range snap.Range(0, snap.Size()) {
			v.Insert(it.Timestamp, it.ID)
		}
		v.Seal()
		ranges := [][2]int{{0, n}, {0, 0}, {n, n}}
		for range 300 {
			a, b := r.Intn(n+1), r.Intn(n+1)
			ranges = append(ranges, [2]int{min(a, b), max(a, b)})
		}
		for _, rg := range ranges {
			if got, want := snap.Fingerprint(rg[0], rg[1]), v.Fingerprint(rg[0], rg[1]); got != want {
				t.Fatalf("%d events: fingerprint of [%d, %d) is %s, vector says %s", n, rg[0], rg[1], got, want)
			}
		}
	}
}

// sum256 adds and subtracts modulo 2^256 with carries and borrows across
// every limb.
func TestSum256CarriesAndBorrows(t *testing.T) {
	var ones [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	var one [32]byte
	one[0] = 1
	var s sum256
	s.add(&ones) // 2^256 - 1
	s.add(&one)  // wraps to 0
	if s != (sum256{}) {
		t.Fatalf("(2^256-1)+1 = %x, want 0", s)
	}
	var a, b sum256
	b.add(&one)
	a.minus(&b) // 0 - 1 = 2^256 - 1
	if a != (sum256{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}) {
		t.Fatalf("0-1 = %x, want 2^256-1", a)
	}
	a.plus(&b)
	if a != (sum256{}) {
		t.Fatalf("(2^256-1)+1 = %x, want 0", a)
	}
}
