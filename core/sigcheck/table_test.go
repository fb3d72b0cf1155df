//go:build !libsecp256k1

package sigcheck

import (
	"testing"

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
