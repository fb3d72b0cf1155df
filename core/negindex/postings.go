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
// The 64-hex keys (most keys: ~0.65 per event in a corpus-like store) live
// in two tiers: sorted, a packed array of 33-byte keys with their values
// searched by bisection (37 bytes a key, no slack), and recent, a map of
// the keys added since the last merge, folded into sorted once it holds a
// sixteenth as many (issue 27 part 2: the map alone took 47–93 bytes a key
// depending on where it was in its growth, 37–50 MiB per million events).
// A key is in one tier only; one removed from sorted keeps its place with
// the value tomb until the next merge.
type postings struct {
	sortedKeys []byte   // hexKeyLen bytes per key, ascending
	sortedVals []uint32 // the value of each key in sortedKeys, or tomb
	tombs      int      // tomb values in sortedVals
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

func newPostings() postings {
	return postings{hexes: map[[hexKeyLen]byte]uint32{}, strs: map[string]uint32{}}
}

// search returns h's position in sorted, or where it would go.
func (p *postings) search(h *[hexKeyLen]byte) (int, bool) {
	n := len(p.sortedVals)
	i := sort.Search(n, func(i int) bool { return bytes.Compare(p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen], h[:]) >= 0 })
	return i, i < n && bytes.Equal(p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen], h[:])
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
	return 0, false
}

func (p *postings) set(k tkey, v uint32) {
	if k.s != "" {
		p.strs[k.s] = v
		return
	}
	if i, ok := p.search(&k.h); ok {
		if p.sortedVals[i] == tomb {
			p.tombs--
		}
		p.sortedVals[i] = v
		return
	}
	p.hexes[k.h] = v
	if len(p.hexes) >= max(mergeMin, len(p.sortedVals)/16) {
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
	}
}

// merge folds recent into sorted and drops the tombs, in place: sorted's
// arrays grow by appending (no second copy of them unless their capacity
// is exceeded) and are filled from the back.
func (p *postings) merge() {
	// Drop the tombs, moving the live keys down.
	n := 0
	if p.tombs > 0 {
		for i, v := range p.sortedVals {
			if v == tomb {
				continue
			}
			copy(p.sortedKeys[n*hexKeyLen:(n+1)*hexKeyLen], p.sortedKeys[i*hexKeyLen:(i+1)*hexKeyLen])
			p.sortedVals[n] = v
			n++
		}
		p.tombs = 0
	} else {
		n = len(p.sortedVals)
	}
	recent := make([][hexKeyLen]byte, 0, len(p.hexes))
	for h := range p.hexes {
		recent = append(recent, h)
	}
	slices.SortFunc(recent, func(a, b [hexKeyLen]byte) int { return bytes.Compare(a[:], b[:]) })
	total := n + len(recent)
	p.sortedKeys = slices.Grow(p.sortedKeys[:n*hexKeyLen], len(recent)*hexKeyLen)[:total*hexKeyLen]
	p.sortedVals = slices.Grow(p.sortedVals[:n], len(recent))[:total]
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
	clear(p.hexes)
}

// compact merges everything into sorted, trims its slack and gives the
// recent map's table back: after a load.
func (p *postings) compact() {
	p.merge()
	p.sortedKeys = slices.Clip(p.sortedKeys)
	p.sortedVals = slices.Clip(p.sortedVals)
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
		int64(cap(p.sortedKeys)) + int64(cap(p.sortedVals))*4
	for k := range p.strs {
		n += int64(len(k))
	}
	for _, l := range p.lists {
		n += int64(cap(l)) * 4
	}
	return n
}
