// Package negguard owns the validation of NIP-77 negentropy messages before
// go-nostr's negentropy engine sees them. The engine trusts its input: a
// bound with a huge or negative id length panics on slicing, an id-list
// count of 2^40 allocates a map that size. Both sides of NIP-77 are exposed
// to hostile peers — the gate answers clients, the sync catch-up client
// reads other relays' replies — so both go through Check.
package negguard

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// negProtocolV1 is the only negentropy protocol version go-nostr speaks.
const negProtocolV1 = 0x61

const (
	negModeSkip        = 0
	negModeFingerprint = 1
	negModeIDList      = 2
	negIDSize          = 32
	negFingerprintSize = 16
	// A varint longer than this cannot hold a non-negative int64.
	negMaxVarintBytes = 9
	// negMaxTimestamp bounds finite bound timestamps: the engine encodes
	// reply varints in at most 8 bytes (56 bits) and panics beyond. Real
	// created_at values are near 2^31.
	negMaxTimestamp = 1 << 48
)

var (
	errNegEmpty  = errors.New("empty negentropy message")
	errTruncated = errors.New("message is truncated")
)

// Check validates a hex negentropy message before go-nostr's engine
// sees it, and returns it in lowercase. The engine trusts its input: a bound
// with a huge or negative id length panics on slicing, an id-list count of
// 2^40 allocates a map of that size, and non-hex ids are compared as
// strings. Messages of another protocol version are returned unchecked,
// because the engine answers those with our version (protocol upgrade).
func Check(msg string) (string, error) {
	if msg == "" {
		return "", errNegEmpty
	}
	if len(msg)%2 != 0 {
		return "", errors.New("odd-length hex")
	}
	lower := true
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if !isHex(c) {
			return "", fmt.Errorf("invalid hex at offset %d", i)
		}
		if c >= 'A' && c <= 'F' {
			lower = false
		}
	}
	if !lower {
		msg = strings.ToLower(msg)
	}
	r := negReader{s: msg}
	v, _ := r.byte()
	if v != negProtocolV1 {
		return msg, nil
	}
	// Bounds must not go backwards: the engine writes its reply bounds as
	// timestamp deltas and panics on a negative one.
	var prevTS int64
	var prevID string
	for r.len() > 0 {
		delta, err := r.varint()
		if err != nil {
			return "", fmt.Errorf("bound timestamp: %w", err)
		}
		ts := int64(math.MaxInt64) // 0 encodes infinity
		if delta > 0 {
			if prevTS == math.MaxInt64 || int64(delta-1) >= negMaxTimestamp-prevTS {
				return "", errors.New("bound timestamp out of range")
			}
			ts = prevTS + int64(delta-1)
		}
		n, err := r.varint()
		if err != nil {
			return "", fmt.Errorf("bound length: %w", err)
		}
		if n > negIDSize {
			return "", fmt.Errorf("bound id length %d exceeds %d", n, negIDSize)
		}
		start := r.i
		if err := r.skip(n); err != nil {
			return "", fmt.Errorf("bound id: %w", err)
		}
		id := msg[start:r.i]
		if ts < prevTS || (ts == prevTS && id < prevID) {
			return "", errors.New("bounds out of order")
		}
		prevTS, prevID = ts, id
		mode, err := r.varint()
		if err != nil {
			return "", fmt.Errorf("mode: %w", err)
		}
		switch mode {
		case negModeSkip:
		case negModeFingerprint:
			if err := r.skip(negFingerprintSize); err != nil {
				return "", fmt.Errorf("fingerprint: %w", err)
			}
		case negModeIDList:
			count, err := r.varint()
			if err != nil {
				return "", fmt.Errorf("id count: %w", err)
			}
			if count > r.len()/negIDSize {
				return "", fmt.Errorf("id list of %d ids is longer than the message", count)
			}
			if err := r.skip(count * negIDSize); err != nil {
				return "", fmt.Errorf("id list: %w", err)
			}
		default:
			return "", fmt.Errorf("unknown mode %d", mode)
		}
	}
	return msg, nil
}

// negReader walks a validated lowercase hex string byte by byte.
type negReader struct {
	s string
	i int // offset in hex characters
}

func (r *negReader) len() int { return (len(r.s) - r.i) / 2 }

func (r *negReader) byte() (byte, error) {
	if r.len() < 1 {
		return 0, errTruncated
	}
	b := unhex(r.s[r.i])<<4 | unhex(r.s[r.i+1])
	r.i += 2
	return b, nil
}

func (r *negReader) skip(n int) error {
	if n < 0 || n > r.len() {
		return errTruncated
	}
	r.i += 2 * n
	return nil
}

func (r *negReader) varint() (int, error) {
	res := 0
	for k := 0; k < negMaxVarintBytes; k++ {
		b, err := r.byte()
		if err != nil {
			return 0, err
		}
		res = res<<7 | int(b&0x7f)
		if b&0x80 == 0 {
			return res, nil // at most 63 bits: never negative
		}
	}
	return 0, errors.New("varint too long")
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	default:
		return c - 'a' + 10
	}
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}
