// Package idtable owns the lookup of a 32-byte id (an event id) in an array
// of records its user keeps: open addressing with linear probing over
// 4-byte slots holding position+1 (0 is empty), the ids compared in the
// user's own records, so no id is stored twice. At most three quarters of
// the slots are used: 5.3–10.7 bytes per id, against 18–37 for a map of
// 8-byte prefixes (relaysync's root events) or a 33-byte key per value
// (negindex's postings of event ids; issue 27 part 2).
//
// The hash is seeded per table over the whole id: ids are chosen by their
// authors, who could otherwise grind them into one probe sequence. It never
// owns the records and never allocates per lookup.
package idtable

import "hash/maphash"

// IDs is the user's array: the id of the record at a position that is in
// the table (or being inserted or removed) must not change meanwhile.
type IDs interface {
	ID(pos uint32) *[32]byte
}

// Table maps ids to positions; the zero Table is not usable: call New.
type Table struct {
	seed  maphash.Seed
	slots []uint32 // len a power of two, or 0
	count int
}

// New returns an empty table.
func New() Table { return Table{seed: maphash.MakeSeed()} }

// Len is the number of ids in the table.
func (t *Table) Len() int { return t.count }

func (t *Table) home(id *[32]byte) int {
	return int(maphash.Comparable(t.seed, *id) & uint64(len(t.slots)-1))
}

// Find returns id's position.
func (t *Table) Find(ids IDs, id *[32]byte) (uint32, bool) {
	if t.count == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if *ids.ID(s - 1) == *id {
			return s - 1, true
		}
	}
}

// Insert records that the id at pos (not yet in the table) is at pos; the
// table grows to keep at most three quarters of its slots used.
func (t *Table) Insert(ids IDs, pos uint32) {
	if (t.count+1)*4 > len(t.slots)*3 {
		t.resize(ids, max(16, 2*len(t.slots)))
	}
	t.put(ids.ID(pos), pos)
	t.count++
}

// Reserve sizes the table for n ids at once (a load that knows its size),
// so that it is not grown, and copied, on the way.
func (t *Table) Reserve(ids IDs, n int) {
	size := 16
	for size*3 < n*4 {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(ids, size)
	}
}

func (t *Table) put(id *[32]byte, pos uint32) {
	mask := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = pos + 1
}

// Remove forgets the id at pos (still there), shifting back the entries
// probed past it so that no lookup stops early at the hole; a pos not in
// the table changes nothing.
func (t *Table) Remove(ids IDs, pos uint32) {
	if t.count == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(ids.ID(pos))
	for t.slots[i] != pos+1 {
		if t.slots[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	t.slots[i] = 0
	t.count--
	// Backward-shift deletion: an entry between the hole and the next
	// empty slot moves into the hole unless its home lies cyclically in
	// (hole, its slot].
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		h := t.home(ids.ID(t.slots[j] - 1))
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i], t.slots[j] = t.slots[j], 0
			i = j
		}
	}
}

// Shrink gives memory back after removals: the table is rebuilt at the
// smallest size that keeps it at most half full.
func (t *Table) Shrink(ids IDs) {
	if t.count == 0 {
		*t = Table{seed: t.seed}
		return
	}
	n := 16
	for n < 2*t.count {
		n *= 2
	}
	if n < len(t.slots) {
		t.resize(ids, n)
	}
}

func (t *Table) resize(ids IDs, n int) {
	old := t.slots
	t.slots = make([]uint32, n)
	for _, s := range old {
		if s != 0 {
			t.put(ids.ID(s-1), s-1)
		}
	}
}

// Bytes is the table's heap.
func (t *Table) Bytes() int { return 4 * cap(t.slots) }

// Slots is the number of slots (tests of the shrinking).
func (t *Table) Slots() int { return len(t.slots) }
