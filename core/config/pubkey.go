package config

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// NormalizePubkey accepts a public key as 64 hex characters or as an NIP-19
// npub and returns it as 64 lowercase hex.
func NormalizePubkey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(s), "npub1") {
		b, err := decodeBech32("npub", s)
		if err != nil {
			return "", fmt.Errorf("decode npub: %w", err)
		}
		if len(b) != 32 {
			return "", fmt.Errorf("decode npub: %d bytes, want 32", len(b))
		}
		return hex.EncodeToString(b), nil
	}
	if len(s) != 64 {
		return "", fmt.Errorf("want 64 hex characters or an npub, got %d characters", len(s))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return "", errors.New("want 64 hex characters or an npub")
	}
	return hex.EncodeToString(b), nil
}

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

// decodeBech32 decodes a BIP-173 string with the expected human-readable part
// and returns its 8-bit payload. We implement it here rather than pull in
// go-nostr's nip19, whose bech32 dependency is not in this module's graph.
func decodeBech32(hrp, s string) ([]byte, error) {
	if strings.ToLower(s) != s && strings.ToUpper(s) != s {
		return nil, errors.New("mixed case")
	}
	s = strings.ToLower(s)
	sep := strings.LastIndexByte(s, '1')
	if sep < 1 || sep+7 > len(s) {
		return nil, errors.New("malformed bech32")
	}
	if s[:sep] != hrp {
		return nil, fmt.Errorf("prefix %q, want %q", s[:sep], hrp)
	}
	data := make([]byte, 0, len(s)-sep-1)
	for i := sep + 1; i < len(s); i++ {
		v := strings.IndexByte(bech32Charset, s[i])
		if v < 0 {
			return nil, fmt.Errorf("invalid character %q", s[i])
		}
		data = append(data, byte(v))
	}
	if bech32Polymod(append(hrpExpand(hrp), data...)) != 1 {
		return nil, errors.New("bad checksum")
	}
	return regroup(data[:len(data)-6], 5, 8, false)
}

// encodeBech32 is the inverse of decodeBech32.
func encodeBech32(hrp string, payload []byte) string {
	data, _ := regroup(payload, 8, 5, true)
	values := append(hrpExpand(hrp), data...)
	values = append(values, 0, 0, 0, 0, 0, 0)
	mod := bech32Polymod(values) ^ 1
	for i := 0; i < 6; i++ {
		data = append(data, byte(mod>>uint(5*(5-i)))&31)
	}
	var b strings.Builder
	b.WriteString(hrp)
	b.WriteByte('1')
	for _, d := range data {
		b.WriteByte(bech32Charset[d])
	}
	return b.String()
}

func hrpExpand(hrp string) []byte {
	out := make([]byte, 0, 2*len(hrp)+1)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]>>5)
	}
	out = append(out, 0)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]&31)
	}
	return out
}

func bech32Polymod(values []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, v := range values {
		top := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for i := 0; i < 5; i++ {
			if (top>>uint(i))&1 == 1 {
				chk ^= gen[i]
			}
		}
	}
	return chk
}

// regroup converts between bit group sizes (5-bit bech32 words, bytes).
func regroup(in []byte, from, to uint, pad bool) ([]byte, error) {
	var acc, bits uint
	maxv := uint(1)<<to - 1
	out := make([]byte, 0, len(in)*int(from)/int(to)+1)
	for _, v := range in {
		acc = acc<<from | uint(v)
		bits += from
		for bits >= to {
			bits -= to
			out = append(out, byte(acc>>bits&maxv))
		}
	}
	if pad {
		if bits > 0 {
			out = append(out, byte(acc<<(to-bits)&maxv))
		}
	} else if bits >= from || acc<<(to-bits)&maxv != 0 {
		return nil, errors.New("invalid padding")
	}
	return out, nil
}
