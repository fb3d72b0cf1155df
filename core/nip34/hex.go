package nip34

import "strings"

// IsHex64 reports whether s is a 32-byte value in lowercase hex, the only
// form NIP-01 allows for ids and pubkeys.
func IsHex64(s string) bool { return len(s) == 64 && IsLowerHex(s) }

// DecodeHex64 decodes s into dst if it is a 32-byte value in lowercase
// hex (IsHex64), in one pass over s; it reports false otherwise, leaving
// dst unspecified.
func DecodeHex64(s string, dst *[32]byte) bool {
	if len(s) != 64 {
		return false
	}
	for i := range dst {
		hi, lo := hexVal[s[2*i]], hexVal[s[2*i+1]]
		if hi|lo > 0x0f {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// hexVal is the value of each lowercase hex digit, 0xff for every other byte.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c-'a') + 10
	}
	return t
}()

// IsHex128 reports whether s is a 64-byte value in lowercase hex, the form
// of an event's Schnorr signature.
func IsHex128(s string) bool { return len(s) == 128 && IsLowerHex(s) }

// IsObjectID reports whether s is a git object id: SHA-1 (40) or SHA-256
// (64) lowercase hex.
func IsObjectID(s string) bool {
	return (len(s) == 40 || len(s) == 64) && IsLowerHex(s)
}

// IsLowerHex reports whether s holds lowercase hex digits only (any
// length): such strings order as the bytes they encode.
//
// It is called for every id, pubkey and tag value on the ingest path
// (store, negentropy index, sync, policy): a byte at a time it cost ~4 µs
// an event at 20,000 events (issue 27 part 5), so it checks eight bytes
// per step (isLowerHex8) and the tail a byte at a time.
func IsLowerHex(s string) bool {
	for len(s) >= 8 {
		// The compiler merges these loads into one 64-bit load.
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if !isLowerHex8(w) {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		if hexVal[s[i]] > 0x0f {
			return false
		}
	}
	return true
}

// isLowerHex8 reports whether each of the eight bytes of w is in '0'..'9'
// or 'a'..'f'. For a byte b < 0x80, b + (0x80-lo) has its top bit set
// exactly when b >= lo, and b + (0x7f-hi) exactly when b > hi; neither sum
// reaches 0x100, so no carry crosses into the next byte. Bytes with the
// top bit set are refused first, which keeps every sum below 0x100.
func isLowerHex8(w uint64) bool {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	if w&high != 0 {
		return false
	}
	digit := (w + (0x80-'0')*ones) &^ (w + (0x7f-'9')*ones)
	lower := (w + (0x80-'a')*ones) &^ (w + (0x7f-'f')*ones)
	return (digit|lower)&high == high
}

// normalizeOID lowercases an object id; clients sometimes emit uppercase
// hex, which git itself accepts.
func normalizeOID(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
