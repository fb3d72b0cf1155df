package store

import (
	"encoding/binary"
	"slices"
	"sort"
)

// serialHints maps the first 8 bytes of stored ids (big-endian, so in the id
// index's order) to their events' serials, for idFilter: a lookup by id then
// reads the record under the serial instead of seeking the id index. It is
// a sorted base (12 bytes an id: loaded from the id index when the store
// opens) and a tail map of the ids written since, merged into the base when
// it holds more than an eighth of it: ~14 B an id at a million
// (TestSerialHintsBytesPerID). Like the Bloom filter, it keeps the ids of
// deleted events (their record lookups miss, as an index key whose record
// is gone does) and holds one serial per 8 bytes in the tail: a hint only
// saves a seek, the id index still answers whatever it does not know.
type serialHints struct {
	keys []uint64
	vals []uint32
	tail map[uint64]uint32
}

// hintTailMin is the tail's size below which it is never merged.
const hintTailMin = 4096

// serialBase is a sorted run of (first 8 bytes, serial).
type serialBase struct {
	keys []uint64
	vals []uint32
}

// newSerialBase takes ids in ascending order (the id index's) with their
// serials.
func newSerialBase(ids [][8]byte, serials []uint32) serialBase {
	b := serialBase{keys: make([]uint64, len(ids)), vals: slices.Clone(serials)}
	for i := range ids {
		b.keys[i] = binary.BigEndian.Uint64(ids[i][:])
	}
	return b
}

// load merges a base loaded from the id index with what was added before.
func (h *serialHints) load(b serialBase) {
	h.keys, h.vals = mergeRuns(b.keys, b.vals, h.keys, h.vals)
}

func (h *serialHints) add(k uint64, serial uint32) {
	if h.tail == nil {
		h.tail = map[uint64]uint32{}
	}
	h.tail[k] = serial
	if len(h.tail) > max(hintTailMin, len(h.keys)/8) {
		h.flush()
	}
}

// flush merges the tail into the base.
func (h *serialHints) flush() {
	keys := make([]uint64, 0, len(h.tail))
	for k := range h.tail {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([]uint32, len(keys))
	for i, k := range keys {
		vals[i] = h.tail[k]
	}
	h.keys, h.vals = mergeRuns(h.keys, h.vals, keys, vals)
	h.tail = nil
}

// mergeRuns merges two sorted runs into a new one of exactly their length.
func mergeRuns(ak []uint64, av []uint32, bk []uint64, bv []uint32) ([]uint64, []uint32) {
	if len(bk) == 0 {
		return ak, av
	}
	if len(ak) == 0 {
		return bk, bv
	}
	keys := make([]uint64, 0, len(ak)+len(bk))
	vals := make([]uint32, 0, len(ak)+len(bk))
	i, j := 0, 0
	for i < len(ak) && j < len(bk) {
		if ak[i] <= bk[j] {
			keys, vals = append(keys, ak[i]), append(vals, av[i])
			i++
		} else {
			keys, vals = append(keys, bk[j]), append(vals, bv[j])
			j++
		}
	}
	keys, vals = append(keys, ak[i:]...), append(vals, av[i:]...)
	keys, vals = append(keys, bk[j:]...), append(vals, bv[j:]...)
	return keys, vals
}

// get appends the serials recorded under k to buf.
func (h *serialHints) get(k uint64, buf []uint32) []uint32 {
	for i := sort.Search(len(h.keys), func(i int) bool { return h.keys[i] >= k }); i < len(h.keys) && h.keys[i] == k; i++ {
		buf = append(buf, h.vals[i])
	}
	if v, ok := h.tail[k]; ok {
		buf = append(buf, v)
	}
	return buf
}

// bytes estimates the hints' memory: the base's arrays and ~40 B a tail
// entry (a Go map of 12-byte entries, half to seven eighths full).
func (h *serialHints) bytes() int {
	return 8*cap(h.keys) + 4*cap(h.vals) + 40*len(h.tail)
}

// hintBytes is the serial hints' estimated memory.
func (f *idFilter) hintBytes() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.hints.bytes()
}
