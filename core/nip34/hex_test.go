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

// isLowerHexBytewise is IsLowerHex's rule stated a byte at a time: the
// reference the eight-bytes-a-step check is held to.
func isLowerHexBytewise(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Issue 27 part 5: IsLowerHex checks eight bytes per step; it must refuse
// every byte value outside '0'..'9' and 'a'..'f' at every position of a
// word and of the tail, for every length, and accept lowercase hex.
func TestIsLowerHexRefusesEveryOtherByteAtEveryPosition(t *testing.T) {
	base := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	for n := 0; n <= len(base); n++ {
		if !IsLowerHex(string(base[:n])) {
			t.Fatalf("IsLowerHex(%q) = false", base[:n])
		}
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := append([]byte(nil), base[:n]...)
				b[pos] = byte(c)
				s := string(b)
				if got, want := IsLowerHex(s), isLowerHexBytewise(s); got != want {
					t.Fatalf("IsLowerHex(%q) = %v, want %v (byte %#x at %d of %d)", s, got, want, c, pos, n)
				}
			}
		}
	}
	// Several bad bytes in one word (carries from one byte must not mask
	// another), and a word of one byte value repeated.
	r := rand.New(rand.NewSource(2))
	for range 200000 {
		b := make([]byte, 8+r.Intn(9))
		for i := range b {
			if r.Intn(3) == 0 {
				b[i] = byte(r.Intn(256))
			} else {
				b[i] = "0123456789abcdef"[r.Intn(16)]
			}
		}
		s := string(b)
		if got, want := IsLowerHex(s), isLowerHexBytewise(s); got != want {
			t.Fatalf("IsLowerHex(%q) = %v, want %v", s, got, want)
		}
	}
	for c := 0; c < 256; c++ {
		s := string(bytes.Repeat([]byte{byte(c)}, 64))
		if got, want := IsLowerHex(s), isLowerHexBytewise(s); got != want {
			t.Fatalf("IsLowerHex(64 × %#x) = %v, want %v", c, got, want)
		}
	}
}

var sinkBool bool

// BenchmarkIsLowerHex64 is IsLowerHex on an id (issue 27 part 5), against
// the byte-at-a-time rule in the same run.
func BenchmarkIsLowerHex64(b *testing.B) {
	id := "5c83da77af1dec6d7289834998ad7aafbd9e2191396d75ec3cc27f5a77226f36"
	b.Run("words", func(b *testing.B) {
		for range b.N {
			sinkBool = IsLowerHex(id)
		}
	})
	b.Run("bytewise", func(b *testing.B) {
		for range b.N {
			sinkBool = isLowerHexBytewise(id)
		}
	})
}
