package nip34

import (
	"bytes"
	"encoding/hex"
	"math/rand"
	"testing"
)

// DecodeHex64 accepts exactly what IsHex64 accepts and decodes it as
// encoding/hex does.
func TestDecodeHex64MatchesIsHex64(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	alphabet := "0123456789abcdefABCDEFgz "
	for range 20000 {
		n := 64
		if r.Intn(4) == 0 {
			n = r.Intn(70)
		}
		b := make([]byte, n)
		for i := range b {
			if r.Intn(30) == 0 {
				b[i] = alphabet[r.Intn(len(alphabet))]
			} else {
				b[i] = "0123456789abcdef"[r.Intn(16)]
			}
		}
		s := string(b)
		var got [32]byte
		ok := DecodeHex64(s, &got)
		if ok != IsHex64(s) {
			t.Fatalf("DecodeHex64(%q) = %v, IsHex64 %v", s, ok, IsHex64(s))
		}
		if ok {
			want, _ := hex.DecodeString(s)
			if !bytes.Equal(got[:], want) {
				t.Fatalf("DecodeHex64(%q) = %x", s, got)
			}
		}
	}
}
