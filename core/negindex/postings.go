package negindex

import (
	"encoding/hex"
	"slices"

	"github.com/grasp-dev/grasp/core/nip34"
)

// tkey is a postings key: a tag letter and value. A 64-hex value (an event
// id or pubkey, most of the distinct values: every root event an `e` tag
// names) is kept as its 32 bytes in h, after the letter with its high bit
// set, so it never equals a literal value of the same bytes; any other
// value is s, the letter followed by the value.
type tkey struct {
	h [33]byte
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
// postings are one slot held in the map itself, and a list in lists only
// from the second: ~47 bytes per distinct 64-hex value where a string key
// and a slice took ~120.
type postings struct {
	hexes map[[33]byte]uint32
	strs  map[string]uint32
	lists [][]uint32
	free  []uint32 // unused positions in lists
}

// listBit marks a posting value that is an index into lists.
const listBit = 1 << 31

func newPostings() postings {
	return postings{hexes: map[[33]byte]uint32{}, strs: map[string]uint32{}}
}

func (p *postings) get(k tkey) (uint32, bool) {
	if k.s == "" {
		v, ok := p.hexes[k.h]
		return v, ok
	}
	v, ok := p.strs[k.s]
	return v, ok
}

func (p *postings) set(k tkey, v uint32) {
	if k.s == "" {
		p.hexes[k.h] = v
	} else {
		p.strs[k.s] = v
	}
}

func (p *postings) del(k tkey) {
	if k.s == "" {
		delete(p.hexes, k.h)
	} else {
		delete(p.strs, k.s)
	}
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
	n := int64(len(p.hexes))*slotHex + int64(len(p.strs))*slotStr + int64(cap(p.lists))*24 + int64(cap(p.free))*4
	for k := range p.strs {
		n += int64(len(k))
	}
	for _, l := range p.lists {
		n += int64(cap(l)) * 4
	}
	return n
}
