package negindex

import (
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// A SnapshotBuilder makes a Snapshot from (created_at, id) pairs given in
// any order: the set a NIP-77 client reconciles from (core/relaysync/
// catchup). go-nostr's vector re-adds every id of a range for each
// fingerprint, so a client whose sets differ everywhere spent a pass over
// its whole set per round (1 % missing at 1,000,000 events: 91 rounds,
// 12 s of client CPU; issue 27 part 3); a Snapshot answers a fingerprint
// from its running sums.
type SnapshotBuilder struct {
	items []item
}

// NewSnapshotBuilder expects about n pairs.
func NewSnapshotBuilder(n int) *SnapshotBuilder {
	return &SnapshotBuilder{items: make([]item, 0, n)}
}

// Add adds one pair; it reports false, adding nothing, for a pair no
// Snapshot can hold (an id that is not 64 lowercase hex digits, a created_at outside
// 0 … 2^32-1: no store keeps such events).
func (b *SnapshotBuilder) Add(createdAt nostr.Timestamp, id string) bool {
	if createdAt < 0 || createdAt > 0xffffffff {
		return false
	}
	it := item{ts: uint32(createdAt)}
	if !nip34.DecodeHex64(id, &it.id) {
		return false
	}
	b.items = append(b.items, it)
	return true
}

// Snapshot sorts the pairs, keeps each once and returns them; the builder
// is empty afterwards.
func (b *SnapshotBuilder) Snapshot() *Snapshot {
	items := b.items
	b.items = nil
	slices.SortFunc(items, compareItems)
	items = slices.CompactFunc(items, func(a, b item) bool { return a.ts == b.ts && a.id == b.id })
	return newSnapshot(slices.Clip(items))
}
