package negindex

import (
	"bytes"
	"encoding/hex"
	"iter"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/nip34"
)

// item is one (created_at, id) pair of a snapshot: 36 bytes, where
// go-nostr's vector holds a 24-byte Item plus a 64-byte hex string.
type item struct {
	ts uint32
	id [32]byte
}

func compareItems(a, b item) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	}
	return compareIDs(&a.id, &b.id)
}

// Snapshot is an immutable, sorted set of (created_at, id) pairs: the
// negentropy.Storage of one session. Fingerprints add the raw ids, and hex
// ids are made only for the items the engine lists or bounds with.
type Snapshot struct {
	items []item
	// sh holds the items with their running sums (fingerprint.go), made on
	// the first large Fingerprint; the snapshots of one whole-store set
	// share it (Index.Select).
	sh *shared
	// added counts the ids added into fingerprints so far, visited the
	// entries Select looked at to make the snapshot (tests bound a
	// session's work with them).
	added, visited int
}

// shared is what the snapshots of one set share: its items and their
// running sums, made once for all of them.
type shared struct {
	items []item
	once  sync.Once
	sums  []sum256
}

func newSnapshot(items []item) *Snapshot {
	return &Snapshot{items: items, sh: &shared{items: items}}
}

var _ negentropy.Storage = (*Snapshot)(nil)

// Size is the number of pairs.
func (s *Snapshot) Size() int { return len(s.items) }

func (it *item) negItem() negentropy.Item {
	buf := make([]byte, 64)
	return it.negItemIn(buf)
}

// negItemIn is negItem with its hex id written into buf[:64], which the
// item's ID then refers to: buf must never be written again.
func (it *item) negItemIn(buf []byte) negentropy.Item {
	hex.Encode(buf[:64], it.id[:])
	return negentropy.Item{Timestamp: nostr.Timestamp(it.ts), ID: unsafe.String(&buf[0], 64)}
}

// rangeChunk is how many hex ids Range makes per allocation: the engine
// lists ranges of under 32 items (id lists) and pairs of neighbours
// (bounds). hex.EncodeToString per id (a []byte, then a string copied from
// it) was ~24 % of a NEG-MSG answer's CPU at 1,000,000 events (issue 27
// part 3).
const rangeChunk = 32

// Range yields the items in [begin, end).
func (s *Snapshot) Range(begin, end int) iter.Seq2[int, negentropy.Item] {
	return func(yield func(int, negentropy.Item) bool) {
		var buf []byte
		for i := begin; i < end; i++ {
			if len(buf) == 0 {
				buf = make([]byte, 64*min(rangeChunk, end-i))
			}
			if !yield(i, s.items[i].negItemIn(buf)) {
				return
			}
			buf = buf[64:]
		}
	}
}

// GetBound is the bound at idx, or the infinite bound past the end.
func (s *Snapshot) GetBound(idx int) negentropy.Bound {
	if idx < len(s.items) {
		return negentropy.Bound{Item: s.items[idx].negItem()}
	}
	return negentropy.InfiniteBound
}

// FindLowerBound is the first index in [begin, end) whose item is not
// below bound, ordered as negentropy.ItemCompare orders them (timestamp,
// then the hex id as a string, so a bound's id may be a prefix). Lowercase
// hex orders as its bytes do, so the bound's id is decoded once and
// compared as bytes (a bound the engine read or made always decodes); hex
// ids are made per comparison only for one that does not.
func (s *Snapshot) FindLowerBound(begin, end int, bound negentropy.Bound) int {
	var prefix [32]byte
	n, ok := len(bound.ID)/2, len(bound.ID)%2 == 0 && len(bound.ID) <= 64 && nip34.IsLowerHex(bound.ID)
	if ok {
		hex.Decode(prefix[:n], []byte(bound.ID))
	}
	var buf [64]byte
	idx, _ := slices.BinarySearchFunc(s.items[begin:end], bound, func(it item, b negentropy.Bound) int {
		ts := nostr.Timestamp(it.ts)
		switch {
		case ts < b.Timestamp:
			return -1
		case ts > b.Timestamp:
			return 1
		}
		if ok {
			return bytes.Compare(it.id[:], prefix[:n])
		}
		hex.Encode(buf[:], it.id[:])
		return strings.Compare(string(buf[:]), b.ID)
	})
	return begin + idx
}

// Fingerprint is negentropy's fingerprint of [begin, end).
func (s *Snapshot) Fingerprint(begin, end int) string {
	sum := s.rangeSum(begin, end)
	return sum.fingerprint(end - begin)
}

// IDs lists the snapshot's hex ids in order (tests and diagnostics).
func (s *Snapshot) IDs() []string {
	out := make([]string, len(s.items))
	for i := range s.items {
		out[i] = hex.EncodeToString(s.items[i].id[:])
	}
	return out
}
