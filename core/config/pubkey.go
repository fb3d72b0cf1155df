package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

// NormalizePubkey accepts a public key as 64 hex characters or as an NIP-19
// npub and returns it as 64 lowercase hex. Decoding npubs is nip34's job,
// the one bech32 implementation of the module.
func NormalizePubkey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(s), "npub1") {
		h, err := nip34.DecodeNpub(s)
		if err != nil {
			return "", fmt.Errorf("decode npub: %w", err)
		}
		return h, nil
	}
	if len(s) != 64 {
		return "", fmt.Errorf("want 64 hex characters or an npub, got %d characters", len(s))
	}
	if h := strings.ToLower(s); nip34.IsHex64(h) {
		return h, nil
	}
	return "", errors.New("want 64 hex characters or an npub")
}
