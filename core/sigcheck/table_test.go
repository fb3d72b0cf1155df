//go:build !libsecp256k1

package sigcheck

import (
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcec/v2"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestCheckDecompressesAnAuthorsKeyOnce: ten events of one author cost one
// key decompression, not twenty (go-nostr's path decompresses twice per
// event).
func TestCheckDecompressesAnAuthorsKeyOnce(t *testing.T) {
	k := testkit.NewKey(t)
	keys.Lock()
	before := parses
	keys.Unlock()
	for i := range 10 {
		if r := Event(k.Event(t, 1, nostr.Timestamp(1700000000+i), nil, "hi")); r != Valid {
			t.Fatalf("event %d: %d", i, r)
		}
	}
	keys.Lock()
	n := parses - before
	keys.Unlock()
	if n != 1 {
		t.Fatalf("%d key decompressions for ten events of one author, want 1", n)
	}
}

// TestKeyTableIsBounded: events of more authors than the table holds leave
// it at most maxKeys entries (an anonymous cost has a bound).
func TestKeyTableIsBounded(t *testing.T) {
	evt := testkit.NewKey(t).Event(t, 1, 1700000000, nil, "x")
	// about half of all x values are on the curve; only those are kept
	for i, kept := 0, 0; kept < maxKeys+10; i++ {
		pk := [32]byte{byte(i), byte(i >> 8), byte(i >> 16), 1}
		if _, ok := pubkey(&pk); ok {
			kept++
		}
	}
	keys.Lock()
	n := len(keys.m)
	keys.Unlock()
	if n > maxKeys {
		t.Fatalf("the key table holds %d keys, bound %d", n, maxKeys)
	}
	if Event(evt) != Valid {
		t.Fatal("a valid event fails after the table was refilled")
	}
}

// TestKeyTableHoldsOnlyTheEvenLiftOfItsKey: whatever events put a key in
// the table (a forged signature first, the odd-y secret's key), the entry
// under pk is the curve point with x = pk and an even y, and keys that are
// no point of the curve never enter it: the table cannot be taught a wrong
// point for a pubkey.
func TestKeyTableHoldsOnlyTheEvenLiftOfItsKey(t *testing.T) {
	oddD := findScalar(t, 3000, true)
	evt := signEvent(t, oddD, findScalar(t, 4000, false), &nostr.Event{Kind: 1, CreatedAt: 5, Content: "y"}, none)
	forged := *evt
	forged.Sig = otherHex(rand.New(rand.NewPCG(1, 2)), forged.Sig, 100)
	if Event(&forged) != BadSignature {
		t.Fatal("the forged event checks")
	}
	var pk [32]byte
	if _, err := hex.Decode(pk[:], []byte(evt.PubKey)); err != nil {
		t.Fatal(err)
	}
	keys.Lock()
	P := keys.m[pk]
	keys.Unlock()
	if P == nil {
		t.Fatal("the forged event's (valid) key is not in the table")
	}
	j := toField(&P.odd[0]) // P itself
	var y2, x3 btcec.FieldVal
	y2.SquareVal(&j.Y).Normalize()
	x3.SquareVal(&j.X).Mul(&j.X).AddInt(7).Normalize()
	if j.Y.IsOdd() || *j.X.Bytes() != pk || !y2.Equals(&x3) {
		t.Fatalf("the table holds (%x, odd %v) for key %x", j.X.Bytes(), j.Y.IsOdd(), pk)
	}
	var three, want btcec.JacobianPoint // and its multiples are P's: odd[1] = 3·P
	btcec.DoubleNonConst(&j, &three)
	btcec.AddNonConst(&three, &j, &want)
	want.ToAffine()
	if got := toField(&P.odd[1]); !want.X.Equals(&got.X) || !want.Y.Equals(&got.Y) {
		t.Fatal("the table's 3·P is not 3·P")
	}
	if Event(evt) != Valid {
		t.Fatal("the author's valid event fails after a forged one put the key in the table")
	}
	for _, bad := range []string{strings.Repeat("0", 63) + "5", "fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f"} {
		e := *evt
		e.PubKey = bad
		e.ID = e.GetID()
		Event(&e)
		hex.Decode(pk[:], []byte(bad))
		keys.Lock()
		_, in := keys.m[pk]
		keys.Unlock()
		if in {
			t.Fatalf("key %s (no point of the curve) entered the table", bad)
		}
	}
}
