package negindex

import (
	"bytes"
	"encoding/hex"
	"slices"
	"sort"

	"github.com/grasp-dev/grasp/core/nip34"
)

// tkey is a postings key: a tag letter and value. A 64-hex value (an event
// id or pubkey, most of the distinct values: every root event an `e` tag
// names) is kept as its 32 bytes in h, after the letter with its high bit
// set, so it never equals a literal value of the same bytes; any other
// value is s, the letter followed by the value.
type tkey struct {
	h [hexKeyLen]byte
	s string
}

func tagKey(letter, value string) tkey {
	if nip34.IsHex64(value) {
		var k tkey
		k.h[0] = letter[0] | 0x80
		hex.Decode(k.h[1:], []byte(value))
		return k
	}
	return tkey{s: letter + value}
}

// postings maps keys to the slots of the entries carrying them. Most
// values are carried by one event (an issue's id, named by its comments,
// is carried by each of them; a root patch's by nobody else), so a key's
// postings are one slot held beside the key, and a list in lists only from
// the second.
//
// The 64-hex keys (most keys: ~0.7 per event in a corpus-like store) live
// in three tiers. Sorted, packed arrays searched by bisection, in two
// kinds: refs, for a value that is the id of an indexed entry (most of
// them: the events `e`, `E` and `q` tags name are stored too), kept as the
// letter and that entry's slot, 9 bytes a key with its value, the id read
// from the entry; and lits, the 33-byte key itself, 37 bytes with its
// value. Recent is a map of the keys added since the last merge, folded
// into the sorted tiers once it holds a sixteenth as many (issue 27 part
// 2: the map alone took 47–93 bytes a key, 37–50 MiB per million events;
// lits for every key 37 B, ~125 MiB at 5,000,000 events). A key has one
// live copy only; one removed from a sorted tier keeps its place with the
// value tomb until the next merge.
//
// A ref's entry must keep its id while the ref (live or tomb) sorts by it:
// before the index frees a slot, unref turns the live refs to it into
// recent keys and holds the slot in pending until the next merge drops the
// tombs; only then is it given back (released) for reuse.
type postings struct {
	ix         *Index   // whose slots refs point into, and its id table
	sortedKeys []byte   // lits: hexKeyLen bytes per key, ascending
	sortedVals []uint32 // the value of each key in sortedKeys, or tomb
	tombs      int      // tomb values in sortedVals
	// refs, ordered by (letter, the entry's id).
	refLetters []byte
	refSlots   []uint32
	refVals    []uint32 // or tomb
	refTombs   int
	hexLetters []byte // the letters (high bit set) hex keys can have
	pending    []uint32
	released   []uint32
	hexes      map[[hexKeyLen]byte]uint32
	strs       map[string]uint32
	lists      [][]uint32
	free       []uint32 // unused positions in lists
}

const (
	hexKeyLen = 33
	// tomb marks a removed key in sortedVals; it is never a value (a list
	// index that high would need 2^31 lists).
	tomb = ^uint32(0)
	// mergeMin is the fewest recent keys that are merged into sorted: a
	// small store keeps its keys in the map.
	mergeMin = 1024
)

// listBit marks a posting value that is an index into lists.
const listBit = 1 << 31

func newPostings(ix *Index, letters []string) postings {
	p := postings{ix: ix, hexes: map[[hexKeyLen]byte]uint32{}, strs: map[string]uint32{}}
	for _, l := range letters {
		p.hexLetters = append(p.hexLetters, l[0]|0x80)
	}
	return p
}

// search returns h's position in sorted, or where it would go.
func (p *postings) search(h *[hexKeyLen]byte) (int, bool) {
	n := len(p.sortedVals)
	i := sort.Search(n, func(i int) bool { return bytes.Compare(p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen], h[:]) >= 0 })
	return i, i < n && bytes.Equal(p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen], h[:])
}

// compareRef orders ref i against h.
func (p *postings) compareRef(i int, h *[hexKeyLen]byte) int {
	switch l := p.refLetters[i]; {
	case l < h[0]:
		return -1
	case l > h[0]:
		return 1
	}
	return bytes.Compare(p.ix.slots[p.refSlots[i]].id[:], h[1:])
}

// searchRef returns h's position in refs, or where it would go.
func (p *postings) searchRef(h *[hexKeyLen]byte) (int, bool) {
	n := len(p.refSlots)
	i := sort.Search(n, func(i int) bool { return p.compareRef(i, h) >= 0 })
	return i, i < n && p.compareRef(i, h) == 0
}

func (p *postings) get(k tkey) (uint32, bool) {
	if k.s != "" {
		v, ok := p.strs[k.s]
		return v, ok
	}
	if v, ok := p.hexes[k.h]; ok {
		return v, true
	}
	if i, ok := p.search(&k.h); ok && p.sortedVals[i] != tomb {
		return p.sortedVals[i], true
	}
	if i, ok := p.searchRef(&k.h); ok && p.refVals[i] != tomb {
		return p.refVals[i], true
	}
	return 0, false
}

func (p *postings) set(k tkey, v uint32) {
	if k.s != "" {
		p.strs[k.s] = v
		return
	}
	if _, ok := p.hexes[k.h]; ok {
		p.hexes[k.h] = v
		return
	}
	if i, ok := p.search(&k.h); ok {
		if p.sortedVals[i] == tomb {
			p.tombs--
		}
		p.sortedVals[i] = v
		return
	}
	// A ref tomb is never revived: its entry may be on its way out
	// (pending). The key goes to recent and the next merge drops the tomb.
	if i, ok := p.searchRef(&k.h); ok && p.refVals[i] != tomb {
		p.refVals[i] = v
		return
	}
	p.hexes[k.h] = v
	p.mergeIfDue()
}

// mergeIfDue merges once recent holds a sixteenth as many keys as the
// sorted tiers, or as many slots wait in pending.
func (p *postings) mergeIfDue() {
	if due := max(mergeMin, (len(p.sortedVals)+len(p.refVals))/16); len(p.hexes) >= due || len(p.pending) >= due {
		p.merge()
	}
}

func (p *postings) del(k tkey) {
	if k.s != "" {
		delete(p.strs, k.s)
		return
	}
	if _, ok := p.hexes[k.h]; ok {
		delete(p.hexes, k.h)
		return
	}
	if i, ok := p.search(&k.h); ok && p.sortedVals[i] != tomb {
		p.sortedVals[i] = tomb
		p.tombs++
		return
	}
	if i, ok := p.searchRef(&k.h); ok && p.refVals[i] != tomb {
		p.refVals[i] = tomb
		p.refTombs++
	}
}

// unref is called before the index frees slot (its entry still there):
// the live refs to it become recent keys, and if any ref (live or tomb)
// sorts by its id, the slot waits in pending for the next merge. It
// reports whether the slot is pending; if not it is the caller's to free.
func (p *postings) unref(slot uint32) bool {
	if len(p.refSlots) == 0 {
		return false
	}
	id := &p.ix.slots[slot].id
	var moved []tkey
	var vals []uint32
	found := false
	for _, l := range p.hexLetters {
		var k tkey
		k.h[0] = l
		copy(k.h[1:], id[:])
		i, ok := p.searchRef(&k.h)
		if !ok || p.refSlots[i] != slot {
			continue
		}
		found = true
		if p.refVals[i] != tomb {
			moved, vals = append(moved, k), append(vals, p.refVals[i])
			p.refVals[i] = tomb
			p.refTombs++
		}
	}
	if !found {
		return false
	}
	p.pending = append(p.pending, slot)
	for i, k := range moved {
		p.hexes[k.h] = vals[i]
	}
	p.mergeIfDue()
	return true
}

// merge folds recent into the sorted tiers (refs for the values the id
// table finds, lits for the others) and drops the tombs, in place: the
// arrays grow by appending (no second copy of them unless their capacity
// is exceeded) and are filled from the back. The slots in pending are then
// released.
func (p *postings) merge() {
	p.dropTombs()
	recent := make([][hexKeyLen]byte, 0, len(p.hexes))
	for h := range p.hexes {
		recent = append(recent, h)
	}
	slices.SortFunc(recent, func(a, b [hexKeyLen]byte) int { return bytes.Compare(a[:], b[:]) })
	var refs []ref
	lits := recent[:0]
	for _, h := range recent {
		if slot, ok := p.ix.ids.Find(p.ix.idView(), (*[32]byte)(h[1:])); ok {
			refs = append(refs, ref{h[0], slot, p.hexes[h]})
			continue
		}
		lits = append(lits, h)
	}
	p.mergeLits(lits)
	p.mergeRefs(refs)
	clear(p.hexes)
	p.released = append(p.released, p.pending...)
	p.pending = p.pending[:0]
}

// ref is one key of refs.
type ref struct {
	letter byte
	slot   uint32
	val    uint32
}

// dropTombs moves the live keys of both sorted tiers down over the tombs.
func (p *postings) dropTombs() {
	if p.tombs > 0 {
		n := 0
		for i, v := range p.sortedVals {
			if v == tomb {
				continue
			}
			copy(p.sortedKeys[n*hexKeyLen:(n+1)*hexKeyLen], p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen])
			p.sortedVals[n] = v
			n++
		}
		p.sortedKeys, p.sortedVals, p.tombs = p.sortedKeys[:n*hexKeyLen], p.sortedVals[:n], 0
	}
	if p.refTombs > 0 {
		n := 0
		for i, v := range p.refVals {
			if v == tomb {
				continue
			}
			p.refLetters[n], p.refSlots[n], p.refVals[n] = p.refLetters[i], p.refSlots[i], v
			n++
		}
		p.refLetters, p.refSlots, p.refVals, p.refTombs = p.refLetters[:n], p.refSlots[:n], p.refVals[:n], 0
	}
}

// mergeLits merges recent (sorted, not in lits, values in hexes) into lits.
func (p *postings) mergeLits(recent [][hexKeyLen]byte) {
	n := len(p.sortedVals)
	total := n + len(recent)
	p.sortedKeys = slices.Grow(p.sortedKeys, len(recent)*hexKeyLen)[:total*hexKeyLen]
	p.sortedVals = slices.Grow(p.sortedVals, len(recent))[:total]
	i, j := n-1, len(recent)-1
	for w := total - 1; j >= 0; w-- {
		if i >= 0 && bytes.Compare(p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen], recent[j][:]) > 0 {
			copy(p.sortedKeys[w*hexKeyLen:(w+1)*hexKeyLen], p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen])
			p.sortedVals[w] = p.sortedVals[i]
			i--
			continue
		}
		copy(p.sortedKeys[w*hexKeyLen:(w+1)*hexKeyLen], recent[j][:])
		p.sortedVals[w] = p.hexes[recent[j]]
		j--
	}
}

// mergeRefs merges add (sorted by letter and id, none in refs) into refs.
func (p *postings) mergeRefs(add []ref) {
	if len(add) == 0 {
		return
	}
	n := len(p.refVals)
	total := n + len(add)
	p.refLetters = slices.Grow(p.refLetters, len(add))[:total]
	p.refSlots = slices.Grow(p.refSlots, len(add))[:total]
	p.refVals = slices.Grow(p.refVals, len(add))[:total]
	i, j := n-1, len(add)-1
	for w := total - 1; j >= 0; w-- {
		if i >= 0 && p.refAfter(i, &add[j]) {
			p.refLetters[w], p.refSlots[w], p.refVals[w] = p.refLetters[i], p.refSlots[i], p.refVals[i]
			i--
			continue
		}
		p.refLetters[w], p.refSlots[w], p.refVals[w] = add[j].letter, add[j].slot, add[j].val
		j--
	}
}

// refAfter reports whether ref i sorts after r.
func (p *postings) refAfter(i int, r *ref) bool {
	if p.refLetters[i] != r.letter {
		return p.refLetters[i] > r.letter
	}
	return bytes.Compare(p.ix.slots[p.refSlots[i]].id[:], p.ix.slots[r.slot].id[:]) > 0
}

// resolve moves the lits the id table now finds into refs: after a load,
// which fills lits before the table exists.
func (p *postings) resolve() {
	var refs []ref
	n := 0
	for i, v := range p.sortedVals {
		key := p.sortedKeys[i*hexKeyLen : (i+1)*hexKeyLen]
		if v != tomb {
			if slot, ok := p.ix.ids.Find(p.ix.idView(), (*[32]byte)(key[1:])); ok {
				refs = append(refs, ref{key[0], slot, v})
				continue
			}
		}
		copy(p.sortedKeys[n*hexKeyLen:(n+1)*hexKeyLen], key)
		p.sortedVals[n] = v
		n++
	}
	p.sortedKeys, p.sortedVals = p.sortedKeys[:n*hexKeyLen], p.sortedVals[:n]
	p.mergeRefs(refs)
}

// compact merges everything into sorted, trims its slack and gives the
// recent map's table back: after a load.
func (p *postings) compact() {
	p.merge()
	p.resolve()
	p.dropTombs()
	p.sortedKeys = slices.Clone(p.sortedKeys)
	p.sortedVals = slices.Clone(p.sortedVals)
	p.refLetters = slices.Clip(p.refLetters)
	p.refSlots = slices.Clip(p.refSlots)
	p.refVals = slices.Clip(p.refVals)
	p.hexes = map[[hexKeyLen]byte]uint32{}
}

// add records slot under k.
func (p *postings) add(k tkey, slot uint32) {
	v, ok := p.get(k)
	switch {
	case !ok:
		p.set(k, slot)
	case v&listBit != 0:
		p.lists[v&^listBit] = append(p.lists[v&^listBit], slot)
	default:
		p.set(k, listBit|p.newList([]uint32{v, slot}))
	}
}

func (p *postings) newList(l []uint32) uint32 {
	if n := len(p.free); n > 0 {
		i := p.free[n-1]
		p.free = p.free[:n-1]
		p.lists[i] = l
		return i
	}
	p.lists = append(p.lists, l)
	return uint32(len(p.lists) - 1)
}

// remove forgets slot under k.
func (p *postings) remove(k tkey, slot uint32) {
	v, ok := p.get(k)
	switch {
	case !ok:
	case v&listBit == 0:
		if v == slot {
			p.del(k)
		}
	default:
		i := v &^ listBit
		l := p.lists[i]
		if j := slices.Index(l, slot); j >= 0 {
			l[j] = l[len(l)-1]
			l = l[:len(l)-1]
		}
		if len(l) > 1 {
			p.lists[i] = l
			return
		}
		p.lists[i] = nil
		p.free = append(p.free, i)
		if len(l) == 1 {
			p.set(k, l[0])
		} else {
			p.del(k)
		}
	}
}

// slots returns k's slots; one is returned in buf.
func (p *postings) slots(k tkey, buf *[1]uint32) []uint32 {
	v, ok := p.get(k)
	switch {
	case !ok:
		return nil
	case v&listBit != 0:
		return p.lists[v&^listBit]
	default:
		buf[0] = v
		return buf[:]
	}
}

// dropSlots removes dropped slots everywhere and trims the lists: after a
// load, which appends without knowing the final lengths.
func (p *postings) dropSlots(dropped map[uint32]bool) {
	for i, l := range p.lists {
		if l == nil {
			continue
		}
		if dropped != nil {
			l = slices.DeleteFunc(l, func(s uint32) bool { return dropped[s] })
		}
		if cap(l) > len(l)+len(l)/8 {
			l = slices.Clone(l)
		}
		p.lists[i] = l
	}
	if dropped == nil {
		return
	}
	fix := func(v uint32) (uint32, bool) {
		if v&listBit == 0 {
			return v, !dropped[v]
		}
		l := p.lists[v&^listBit]
		switch len(l) {
		case 0:
			p.lists[v&^listBit] = nil
			p.free = append(p.free, v&^listBit)
			return 0, false
		case 1:
			p.lists[v&^listBit] = nil
			p.free = append(p.free, v&^listBit)
			return l[0], true
		}
		return v, true
	}
	for k, v := range p.hexes {
		if nv, keep := fix(v); !keep {
			delete(p.hexes, k)
		} else {
			p.hexes[k] = nv
		}
	}
	for i, v := range p.sortedVals {
		if v == tomb {
			continue
		}
		if nv, keep := fix(v); !keep {
			p.sortedVals[i] = tomb
			p.tombs++
		} else {
			p.sortedVals[i] = nv
		}
	}
	for k, v := range p.strs {
		if nv, keep := fix(v); !keep {
			delete(p.strs, k)
		} else {
			p.strs[k] = nv
		}
	}
}

// bytes estimates the heap the postings take.
func (p *postings) bytes() int64 {
	const slotHex, slotStr = 47, 32 // map slot with its share of control bytes and load
	n := int64(len(p.hexes))*slotHex + int64(len(p.strs))*slotStr + int64(cap(p.lists))*24 + int64(cap(p.free))*4 +
		int64(cap(p.sortedKeys)) + int64(cap(p.sortedVals))*4 +
		int64(cap(p.refLetters)) + int64(cap(p.refSlots))*4 + int64(cap(p.refVals))*4 +
		int64(cap(p.pending))*4 + int64(cap(p.released))*4
	for k := range p.strs {
		n += int64(len(k))
	}
	for _, l := range p.lists {
		n += int64(cap(l)) * 4
	}
	return n
}
