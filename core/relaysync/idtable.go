package relaysync

import "hash/maphash"

// idTable finds a root event's position in RepoSyncIndex.events by its
// 32-byte id: open addressing with linear probing over 4-byte slots that
// hold position+1 (0 is empty), the ids compared in events itself. It
// replaces a map of 8-byte id prefixes to positions (16-byte slots with the
// map's control bytes and load: ~18–37 B a root event) and its overflow map
// for prefixes shared by ground ids: ~5–11 B a root event, exact (issue 27
// part 2). The hash is seeded per process over the whole id, so no id can
// be ground to lengthen another's probe sequence.
type idTable struct {
	seed  maphash.Seed
	slots []uint32 // len a power of two, or 0
	count int
}

func newIDTable() idTable { return idTable{seed: maphash.MakeSeed()} }

func (t *idTable) home(id *[32]byte) int {
	return int(maphash.Comparable(t.seed, *id) & uint64(len(t.slots)-1))
}

// find returns id's position in events.
func (t *idTable) find(events [][32]byte, id *[32]byte) (uint32, bool) {
	if t.count == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if events[s-1] == *id {
			return s - 1, true
		}
	}
}

// insert records that events[pos] (not yet in the table) is at pos; the
// table grows to keep at most three quarters of its slots used.
func (t *idTable) insert(events [][32]byte, pos uint32) {
	if (t.count+1)*4 > len(t.slots)*3 {
		t.resize(events, max(16, 2*len(t.slots)))
	}
	t.put(&events[pos], pos)
	t.count++
}

func (t *idTable) put(id *[32]byte, pos uint32) {
	mask := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = pos + 1
}

// remove forgets the id at events[pos] (still there), shifting back the
// entries probed past it so that no lookup stops early at the hole.
func (t *idTable) remove(events [][32]byte, pos uint32) {
	if t.count == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(&events[pos])
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
		h := t.home(&events[t.slots[j]-1])
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i], t.slots[j] = t.slots[j], 0
			i = j
		}
	}
}

// shrink gives memory back after removals: the table is rebuilt at the
// smallest size that keeps it at most half full.
func (t *idTable) shrink(events [][32]byte) {
	if t.count == 0 {
		*t = idTable{seed: t.seed}
		return
	}
	n := 16
	for n < 2*t.count {
		n *= 2
	}
	if n < len(t.slots) {
		t.resize(events, n)
	}
}

func (t *idTable) resize(events [][32]byte, n int) {
	old := t.slots
	t.slots = make([]uint32, n)
	for _, s := range old {
		if s != 0 {
			t.put(&events[s-1], s-1)
		}
	}
}

// bytes is the table's heap.
func (t *idTable) bytes() int { return 4 * cap(t.slots) }
