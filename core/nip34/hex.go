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
func IsLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// normalizeOID lowercases an object id; clients sometimes emit uppercase
// hex, which git itself accepts.
func normalizeOID(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
