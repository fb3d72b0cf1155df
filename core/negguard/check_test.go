package negguard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

func TestR2_Check(t *testing.T) {
	valid := []string{
		"61",                                    // nothing to reconcile
		"6100000200",                            // empty id list over everything
		"62",                                    // another version: passed on for the version answer
		"6200ffff",                              // another version is not parsed
		"61000001" + strings.Repeat("ab", 16),   // fingerprint
		"6100000201" + strings.Repeat("cd", 32), // one id
		"6105" + "02aabb" + "00" + "0000020" + "0",             // bound with a 2-byte prefix, skip, then id list
		"61" + "8100" + "00" + "01" + strings.Repeat("00", 16), // two-byte timestamp varint
		strings.ToUpper("6100000200"),
	}
	for _, m := range valid {
		out, err := Check(m)
		if err != nil {
			t.Errorf("%s: %v", m, err)
		}
		if out != strings.ToLower(m) {
			t.Errorf("%s: returned %s", m, out)
		}
	}
	invalid := []string{
		"", "6", "6g", "61 0", "610000",
		"6100210000", // bound id of 33 bytes
		"61000003",   // mode 3
		"6100000205", // five ids promised, none given
		"610000010102",
		"61" + strings.Repeat("ff", 10) + "00",
		"6100000201" + strings.Repeat("cd", 31),
	}
	for _, m := range invalid {
		if _, err := Check(m); err == nil {
			t.Errorf("%q accepted", m)
		}
	}
}

func serverVector(n int) *vector.Vector {
	vec := vector.New()
	for i := 0; i < n; i++ {
		vec.Insert(nostr.Timestamp(1_700_000_000+i), fmt.Sprintf("%064x", i*7919))
	}
	vec.Seal()
	return vec
}

// FuzzNegMessage checks that whatever Check lets through cannot
// panic go-nostr's engine (the gate recovers anyway; this proves the check
// is the real guard).
func FuzzNegMessage(f *testing.F) {
	client := negentropy.New(serverVector(100), 0)
	f.Add(client.Start())
	for _, s := range []string{"61", "6100000200", "62", "61000003", "6100210000", "6100ffffffffffffffff7f00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		checked, err := Check(msg)
		if err != nil {
			return
		}
		neg := negentropy.New(serverVector(40), 4096)
		out, err := neg.Reconcile(checked)
		if err == nil && (len(out) < 2 || out[:2] != "61") {
			t.Fatalf("reply %q does not start with our version", out)
		}
	})
}
