package nip34

import (
	"encoding/hex"
	"errors"
	"strings"
)

// npub encoding is BIP-173 bech32 with the "npub" prefix (NIP-19). It is
// implemented here rather than through go-nostr/nip19 because that package
// pulls in a module this repository does not otherwise need, and nip34 must
// stay dependency-light for every package that imports it.

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

var bech32Gen = [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}

func bech32Polymod(values []byte) uint32 {
	chk := uint32(1)
	for _, v := range values {
		top := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for i := 0; i < 5; i++ {
			if (top>>uint(i))&1 == 1 {
				chk ^= bech32Gen[i]
			}
		}
	}
	return chk
}

func bech32HRPExpand(hrp string) []byte {
	out := make([]byte, 0, len(hrp)*2+1)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]>>5)
	}
	out = append(out, 0)
	for i := 0; i < len(hrp); i++ {
		out = append(out, hrp[i]&31)
	}
	return out
}

// convertBits regroups a bit stream from `from`-bit to `to`-bit groups.
func convertBits(data []byte, from, to uint, pad bool) ([]byte, error) {
	acc, bits := uint32(0), uint(0)
	maxv := uint32(1)<<to - 1
	var out []byte
	for _, b := range data {
		if uint32(b)>>from != 0 {
			return nil, errors.New("invalid data range")
		}
		acc = acc<<from | uint32(b)
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

// Npub encodes a 64-hex pubkey as npub; it returns "" for invalid input.
func Npub(pubHex string) string {
	if !IsHex64(pubHex) {
		return ""
	}
	raw, _ := hex.DecodeString(pubHex)
	data, _ := convertBits(raw, 8, 5, true)
	const hrp = "npub"
	values := append(bech32HRPExpand(hrp), data...)
	values = append(values, 0, 0, 0, 0, 0, 0)
	mod := bech32Polymod(values) ^ 1
	var b strings.Builder
	b.WriteString(hrp)
	b.WriteByte('1')
	for _, d := range data {
		b.WriteByte(bech32Charset[d])
	}
	for i := 0; i < 6; i++ {
		b.WriteByte(bech32Charset[(mod>>uint(5*(5-i)))&31])
	}
	return b.String()
}

// DecodeNpub returns the hex pubkey of an npub, checking its checksum.
func DecodeNpub(s string) (string, error) {
	if strings.ToLower(s) != s && strings.ToUpper(s) != s {
		return "", errors.New("npub mixes upper and lower case")
	}
	s = strings.ToLower(s)
	hrp, rest, ok := strings.Cut(s, "1")
	if !ok || hrp != "npub" || len(rest) < 7 {
		return "", errors.New("not an npub")
	}
	data := make([]byte, len(rest))
	for i := 0; i < len(rest); i++ {
		idx := strings.IndexByte(bech32Charset, rest[i])
		if idx < 0 {
			return "", errors.New("npub has a character outside the bech32 set")
		}
		data[i] = byte(idx)
	}
	if bech32Polymod(append(bech32HRPExpand(hrp), data...)) != 1 {
		return "", errors.New("npub checksum mismatch")
	}
	raw, err := convertBits(data[:len(data)-6], 5, 8, false)
	if err != nil || len(raw) != 32 {
		return "", errors.New("npub does not hold a 32-byte key")
	}
	return hex.EncodeToString(raw), nil
}
