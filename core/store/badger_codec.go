package store

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
)

// The badger backend's on-disk layout, written and read here. It is
// eventstore v0.17.14's badger layout, byte for byte, so data directories
// written by any earlier grasp open and read as before, and so do the
// library's own migrations and serial counter at open (badger_store.go):
//
//	0 + serial (u32)                                 the event record (encodeRecord)
//	1 + created_at (u32) + serial                    every event
//	2 + id[:8] + serial                              every event (no created_at)
//	3 + kind (u16) + created_at + serial             every event
//	4 + pubkey[:8] + created_at + serial             every event
//	5 + pubkey[:8] + kind + created_at + serial      every event
//	6 + letter + value + created_at + serial         a tag value of 1-100 bytes
//	7 + letter + value[:8] + created_at + serial     a 64-hex tag value
//	8 + kind + 0 + pubkey[:8] + d + created_at + serial   an address tag value
//
// all with empty values. Keys 6 and 8 end in a value of any length, so one
// value can be a prefix of another ("repo" of "repo-b"): a scan reads only
// keys of its exact length (badger_query.go). Key 8 carries the address's
// kind where the tag letter was meant to be (the library writes the letter,
// then the kind over it), so `a` and `A` tags of one address share it;
// queries check every event against the whole filter anyway.
//
// The library's own writes and queries are not used for the badger backend
// (issue 27): it allocated a 64 KiB buffer per encoded event, opened a
// transaction and an iterator over the whole tree per write, and
// materialised every query's results before sending the first.
const (
	keyRaw        byte = 0
	keyCreatedAt  byte = 1
	keyID         byte = 2
	keyKind       byte = 3
	keyPubkey     byte = 4
	keyPubkeyKind byte = 5
	keyTag        byte = 6
	keyTag32      byte = 7
	keyTagAddr    byte = 8
)

// maxIndexedTagValue is the longest tag value that gets an index key.
const maxIndexedTagValue = 100

// Offsets of the fixed part of an event record.
const (
	recID        = 0
	recPubkey    = 32
	recSig       = 64
	recCreatedAt = 128
	recKind      = 132
	recContent   = 134 // u16 length, then the content
	recMin       = 138 // fixed part, empty content, tag count
)

var errBadRecord = errors.New("malformed event record")

// encodeRecord appends evt's record to dst: id, pubkey and sig as bytes,
// created_at u32, kind u16, content length u16 and content, tag count u16,
// then per tag an item count u8 and per item a u16 length, the bytes and a
// zero byte. The caller has checked the limits (validateEvent) and that the
// content fits 16 bits (splitContent).
func encodeRecord(dst []byte, evt *nostr.Event) []byte {
	n := recMin + len(evt.Content)
	for _, tag := range evt.Tags {
		n++
		for _, item := range tag {
			n += 3 + len(item)
		}
	}
	dst = slices.Grow(dst, n)
	var fixed [128]byte
	hex.Decode(fixed[recID:recPubkey], []byte(evt.ID))
	hex.Decode(fixed[recPubkey:recSig], []byte(evt.PubKey))
	hex.Decode(fixed[recSig:recCreatedAt], []byte(evt.Sig))
	dst = append(dst, fixed[:]...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(evt.CreatedAt))
	dst = binary.BigEndian.AppendUint16(dst, uint16(evt.Kind))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(evt.Content)))
	dst = append(dst, evt.Content...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(evt.Tags)))
	for _, tag := range evt.Tags {
		dst = append(dst, uint8(len(tag)))
		for _, item := range tag {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(item)))
			dst = append(dst, item...)
			dst = append(dst, 0)
		}
	}
	return dst
}

// recordHead reads the fixed fields of a record without decoding the rest.
type recordHead []byte

func (r recordHead) ok() bool       { return len(r) >= recMin }
func (r recordHead) id() []byte     { return r[recID:recPubkey] }
func (r recordHead) pubkey() []byte { return r[recPubkey:recSig] }
func (r recordHead) kind() uint16   { return binary.BigEndian.Uint16(r[recKind:]) }

// decodeRecord decodes a whole record into evt. Unlike the library's
// decoder it checks every length against the record instead of recovering
// from a panic.
func decodeRecord(raw []byte, evt *nostr.Event) error {
	if len(raw) < recMin {
		return errBadRecord
	}
	var hexbuf [128]byte
	hex.Encode(hexbuf[:], raw[recID:recSig])
	ids := string(hexbuf[:])
	evt.ID, evt.PubKey = ids[:64], ids[64:]
	hex.Encode(hexbuf[:], raw[recSig:recCreatedAt])
	evt.Sig = string(hexbuf[:])
	evt.CreatedAt = nostr.Timestamp(binary.BigEndian.Uint32(raw[recCreatedAt:]))
	evt.Kind = int(binary.BigEndian.Uint16(raw[recKind:]))
	p := recContent + 2 + int(binary.BigEndian.Uint16(raw[recContent:]))
	if p+2 > len(raw) {
		return errBadRecord
	}
	evt.Content = string(raw[recContent+2 : p])
	nTags := int(binary.BigEndian.Uint16(raw[p:]))
	p += 2
	// One string for every item's bytes, sliced: a record's strings live
	// and die together, and one allocation replaces one per item.
	rest := string(raw[p:])
	base := p
	evt.Tags = make(nostr.Tags, nTags)
	for t := range evt.Tags {
		if p >= len(raw) {
			return errBadRecord
		}
		nItems := int(raw[p])
		p++
		tag := make(nostr.Tag, nItems)
		for i := range tag {
			if p+2 > len(raw) {
				return errBadRecord
			}
			size := int(binary.BigEndian.Uint16(raw[p:]))
			p += 2
			if p+size+1 > len(raw) {
				return errBadRecord
			}
			tag[i] = rest[p-base : p-base+size]
			p += size + 1
		}
		evt.Tags[t] = tag
	}
	return nil
}

// indexKeys calls fn with every index key of evt stored under serial, in
// the library's order and bytes. fn must not keep the slice.
func indexKeys(evt *nostr.Event, serial uint32, fn func(k []byte)) {
	var buf [1 + 2 + 1 + 8 + maxIndexedTagValue + 4 + 4]byte
	var id8, pk8 [8]byte
	hex.Decode(id8[:], []byte(evt.ID[:16]))
	hex.Decode(pk8[:], []byte(evt.PubKey[:16]))
	ts := uint32(evt.CreatedAt)
	kind := uint16(evt.Kind)

	k := append(append(buf[:0], keyID), id8[:]...)
	fn(binary.BigEndian.AppendUint32(k, serial))

	k = append(append(buf[:0], keyPubkey), pk8[:]...)
	fn(tsSerial(k, ts, serial))

	k = binary.BigEndian.AppendUint16(append(buf[:0], keyKind), kind)
	fn(tsSerial(k, ts, serial))

	k = binary.BigEndian.AppendUint16(append(append(buf[:0], keyPubkeyKind), pk8[:]...), kind)
	fn(tsSerial(k, ts, serial))

	for i, tag := range evt.Tags {
		if len(tag) < 2 || len(tag[0]) != 1 || len(tag[1]) == 0 || len(tag[1]) > maxIndexedTagValue {
			continue
		}
		if slices.IndexFunc(evt.Tags[:i], func(t nostr.Tag) bool { return len(t) >= 2 && t[0] == tag[0] && t[1] == tag[1] }) >= 0 {
			continue // the same letter and value again
		}
		fn(tsSerial(tagPrefix(buf[:0], tag[0][0], tag[1]), ts, serial))
	}

	k = append(buf[:0], keyCreatedAt)
	fn(tsSerial(k, ts, serial))
}

func tsSerial(k []byte, ts, serial uint32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(k, ts), serial)
}

// tagPrefix appends the index prefix of one tag value (keys 6, 7 and 8):
// the key up to where created_at follows.
func tagPrefix(dst []byte, letter byte, value string) []byte {
	if kind, pk8, d, ok := addressParts(value); ok {
		dst = binary.BigEndian.AppendUint16(append(dst, keyTagAddr), kind)
		dst = append(dst, 0)
		dst = append(dst, pk8[:]...)
		return append(dst, d...)
	}
	if v, ok := hex32(value); ok {
		return append(append(dst, keyTag32, letter), v[:8]...)
	}
	return append(append(dst, keyTag, letter), value...)
}

// hex32 decodes 64 hex digits of either case: how the library's layout
// reads ids, pubkeys and tag values into keys (data it wrote must be found
// again). It decides only which key a value goes under; what is a valid id
// is nip34.IsHex64's decision, and every candidate a key finds is checked
// by Filter.Matches.
func hex32(s string) (v [32]byte, ok bool) {
	if len(s) != 64 {
		return v, false
	}
	_, err := hex.Decode(v[:], []byte(s))
	return v, err == nil
}

// addressParts splits "kind:pubkey:d" as the library does: exactly three
// parts, a 64-hex pubkey (either case) and a kind that fits 16 bits.
func addressParts(value string) (kind uint16, pk8 [8]byte, d string, ok bool) {
	ks, rest, found := strings.Cut(value, ":")
	if !found {
		return 0, pk8, "", false
	}
	pk, d, found := strings.Cut(rest, ":")
	if !found || strings.Contains(d, ":") {
		return 0, pk8, "", false
	}
	full, ok := hex32(pk)
	if !ok {
		return 0, pk8, "", false
	}
	k, err := strconv.ParseUint(ks, 10, 16)
	if err != nil {
		return 0, pk8, "", false
	}
	copy(pk8[:], full[:8])
	return uint16(k), pk8, d, true
}

// Limits of the binary encoding. An event beyond them cannot be stored
// faithfully, so it is refused instead of truncated. Content beyond the
// codec's 16-bit length goes to a large-content record (badger_large.go).
const (
	maxTags         = math.MaxUint16
	maxTagItems     = math.MaxUint8
	maxTagItemBytes = math.MaxUint16
)

// checkEvent refuses what the encoding cannot hold: created_at beyond 32
// unsigned bits, content beyond a content record, tags beyond the codec's
// field limits.
func (s *badgerStore) checkEvent(evt *nostr.Event) error {
	if err := checkCreatedAt(evt, math.MaxUint32); err != nil {
		return err
	}
	if len(evt.Content) > maxLargeContent {
		return outcome.Errorf(outcome.Invalid, "content of %d bytes exceeds the store's %d-byte limit", len(evt.Content), maxLargeContent)
	}
	if len(evt.Tags) > maxTags {
		return outcome.Errorf(outcome.Invalid, "%d tags exceed the store's limit of %d", len(evt.Tags), maxTags)
	}
	for i, tag := range evt.Tags {
		if len(tag) > maxTagItems {
			return outcome.Errorf(outcome.Invalid, "tag %d has %d items, the store's limit is %d", i, len(tag), maxTagItems)
		}
		for _, item := range tag {
			if len(item) > maxTagItemBytes {
				return outcome.Errorf(outcome.Invalid, "tag %d has an item of %d bytes, the store's limit is %d", i, len(item), maxTagItemBytes)
			}
		}
	}
	return nil
}
