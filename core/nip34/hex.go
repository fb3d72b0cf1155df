package nip34

import "strings"

// IsHex64 reports whether s is a 32-byte value in lowercase hex, the only
// form NIP-01 allows for ids and pubkeys.
func IsHex64(s string) bool { return len(s) == 64 && IsLowerHex(s) }

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
