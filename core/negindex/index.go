// Package negindex owns the in-memory negentropy index: for every stored
// event its (created_at, id) pair, kind and author, kept in (created_at, id)
// order, plus postings for the tag letters GRASP-02 sync filters on. A
// NIP-77 session over the whole store (or over kinds, authors, a time window
// or those tags) is then a walk over compact entries, not a query that
// decodes every event from disk (issue 15 part 1: that decode was 67 % of a
// session's CPU).
//
// The index answers exactly what nostr.Filter.Matches would on the indexed
// events; filters it cannot answer (ids, limit, search, other tag letters,
// empty lists) are refused with ok false and the caller falls back to its
// store query. It never reads or writes storage: its owner (core/store)
// feeds it every save, replacement and deletion after they are applied.
package negindex

import (
	"encoding/hex"
	"errors"
	"slices"
	"sync"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// ErrTooMany is returned by Select when the filter matches more events than
// the caller may reconcile.
var ErrTooMany = errors.New("negindex: filter matches too many events")

// DefaultTagLetters are the tag letters GRASP-02 sync filters on (repo
// coordinates via a/A/q, root events via e/E/q) and d, which addressable
// events are looked up by.
var DefaultTagLetters = []string{"a", "A", "q", "e", "E", "d"}

// blockSize bounds one sorted block. Inserting into a block moves at most
// this many entries (~22 KB), so out-of-order inserts (sync catch-up of old
// events) stay cheap at a million events.
const blockSize = 512

// entry is one indexed event: 44 bytes.
type entry struct {
	ts     uint32
	author uint32 // index into Index.authorKeys
	kind   uint16
	id     [32]byte
}

func (e *entry) less(ts uint32, id *[32]byte) int {
	switch {
	case e.ts < ts:
		return -1
	case e.ts > ts:
		return 1
	}
	return compareIDs(&e.id, id)
}

func compareIDs(a, b *[32]byte) int {
	for i := 0; i < 32; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Index is safe for concurrent use: writers take the lock exclusively,
// Select shares it.
type Index struct {
	mu      sync.RWMutex
	letters map[string]bool
	blocks  [][]entry // each sorted and non-empty; blocks in order
	n       int
	// authors interns pubkeys; they are never forgotten (bounded by the
	// authors ever stored, 36 B each plus the map).
	authors    map[[32]byte]uint32
	authorKeys [][32]byte
	// postings maps tagKey(letter, value) to the entries carrying it, in
	// no particular order.
	postings map[string][]entry
}

// New returns an empty index over the given tag letters (DefaultTagLetters
// when nil).
func New(letters []string) *Index {
	if letters == nil {
		letters = DefaultTagLetters
	}
	ix := &Index{
		letters:  make(map[string]bool, len(letters)),
		authors:  make(map[[32]byte]uint32),
		postings: make(map[string][]entry),
	}
	for _, l := range letters {
		ix.letters[l] = true
	}
	return ix
}

// Len is the number of indexed events.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

// tagKey encodes a tag letter and value as a postings key. A 64-hex value
// (an event id or pubkey) is kept as its 32 bytes, marked by the high bit on
// the letter so it never equals a literal value of the same bytes.
func tagKey(letter, value string) string {
	if nip34.IsHex64(value) {
		var b [33]byte
		b[0] = letter[0] | 0x80
		hex.Decode(b[1:], []byte(value))
		return string(b[:])
	}
	return letter + value
}

// Event is what the index needs of an event; Add and Remove take it so the
// store can feed partially decoded records without building a nostr.Event.
type Event struct {
	CreatedAt uint32
	Kind      uint16
	ID        [32]byte
	PubKey    [32]byte
	// Tags lists (letter, value) pairs of the indexed letters; others may
	// be present and are ignored.
	Tags [][2]string
}

// FromNostr converts evt; ok is false for what no store holds (malformed
// id or pubkey, kind or created_at out of range).
func FromNostr(evt *nostr.Event) (Event, bool) {
	var e Event
	if !nip34.IsHex64(evt.ID) || !nip34.IsHex64(evt.PubKey) || evt.Kind < 0 || evt.Kind > 0xffff ||
		evt.CreatedAt < 0 || evt.CreatedAt > 0xffffffff {
		return e, false
	}
	hex.Decode(e.ID[:], []byte(evt.ID))
	hex.Decode(e.PubKey[:], []byte(evt.PubKey))
	e.CreatedAt = uint32(evt.CreatedAt)
	e.Kind = uint16(evt.Kind)
	for _, t := range evt.Tags {
		if len(t) >= 2 {
			e.Tags = append(e.Tags, [2]string{t[0], t[1]})
		}
	}
	return e, true
}

func (ix *Index) entryOf(e *Event) entry {
	a, ok := ix.authors[e.PubKey]
	if !ok {
		a = uint32(len(ix.authorKeys))
		ix.authorKeys = append(ix.authorKeys, e.PubKey)
		ix.authors[e.PubKey] = a
	}
	return entry{ts: e.CreatedAt, author: a, kind: e.Kind, id: e.ID}
}

// eachKey calls fn once per distinct indexed (letter, value) of e
// (Filter.Matches looks at the first two items of each tag only).
func (ix *Index) eachKey(e *Event, fn func(k string)) {
	var seen []string
	for _, t := range e.Tags {
		if !ix.letters[t[0]] {
			continue
		}
		k := tagKey(t[0], t[1])
		if slices.Contains(seen, k) {
			continue
		}
		seen = append(seen, k)
		fn(k)
	}
}

// Add indexes e; adding an indexed event again changes nothing.
func (ix *Index) Add(e Event) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.add(&e)
}

func (ix *Index) add(e *Event) {
	en := ix.entryOf(e)
	if !ix.insert(en) {
		return
	}
	ix.eachKey(e, func(k string) { ix.postings[k] = append(ix.postings[k], en) })
}

// Remove drops e (found by created_at and id); removing what is not indexed
// changes nothing.
func (ix *Index) Remove(e Event) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.remove(&e)
}

func (ix *Index) remove(e *Event) {
	if !ix.delete(e.CreatedAt, &e.ID) {
		return
	}
	ix.eachKey(e, func(k string) {
		p := ix.postings[k]
		for i := range p {
			if p[i].id == e.ID {
				p[i] = p[len(p)-1]
				p = p[:len(p)-1]
				break
			}
		}
		if len(p) == 0 {
			delete(ix.postings, k)
		} else {
			ix.postings[k] = p
		}
	})
}

// findBlock returns the block that holds or would hold (ts, id).
func (ix *Index) findBlock(ts uint32, id *[32]byte) int {
	// The first block whose last entry is >= (ts, id); the last block if none.
	i, _ := slices.BinarySearchFunc(ix.blocks, struct{}{}, func(b []entry, _ struct{}) int {
		return b[len(b)-1].less(ts, id)
	})
	if i == len(ix.blocks) && i > 0 {
		i--
	}
	return i
}

func (ix *Index) insert(en entry) bool {
	if len(ix.blocks) == 0 {
		ix.blocks = append(ix.blocks, append(make([]entry, 0, 16), en))
		ix.n++
		return true
	}
	bi := ix.findBlock(en.ts, &en.id)
	b := ix.blocks[bi]
	j, found := slices.BinarySearchFunc(b, en, func(x, y entry) int { return x.less(y.ts, &y.id) })
	if found {
		return false
	}
	b = slices.Insert(b, j, en)
	if len(b) > blockSize {
		half := len(b) / 2
		right := append(make([]entry, 0, blockSize), b[half:]...)
		b = b[:half:half]
		b = append(make([]entry, 0, blockSize), b...)
		ix.blocks[bi] = b
		ix.blocks = slices.Insert(ix.blocks, bi+1, right)
	} else {
		ix.blocks[bi] = b
	}
	ix.n++
	return true
}

func (ix *Index) delete(ts uint32, id *[32]byte) bool {
	if len(ix.blocks) == 0 {
		return false
	}
	bi := ix.findBlock(ts, id)
	b := ix.blocks[bi]
	j, found := slices.BinarySearchFunc(b, struct{}{}, func(x entry, _ struct{}) int { return x.less(ts, id) })
	if !found {
		return false
	}
	b = slices.Delete(b, j, j+1)
	if len(b) == 0 {
		ix.blocks = slices.Delete(ix.blocks, bi, bi+1)
	} else {
		ix.blocks[bi] = b
	}
	ix.n--
	return true
}

// Load replaces the index's contents with events, in any order; the store
// calls it once with what it holds on disk.
func (ix *Index) Load(events []Event) {
	fresh := New(nil)
	fresh.letters = ix.letters
	all := make([]entry, 0, len(events))
	for i := range events {
		all = append(all, fresh.entryOf(&events[i]))
	}
	slices.SortFunc(all, func(x, y entry) int { return x.less(y.ts, &y.id) })
	all = slices.CompactFunc(all, func(x, y entry) bool { return x.ts == y.ts && x.id == y.id })
	// Full blocks: the first insert into one splits it; loaded blocks are
	// most of a large index, so no slack is kept in them.
	for start := 0; start < len(all); start += blockSize {
		end := min(start+blockSize, len(all))
		fresh.blocks = append(fresh.blocks, slices.Clone(all[start:end]))
	}
	fresh.n = len(all)
	all = nil
	// Postings sized exactly: count, then fill.
	counts := make(map[string]int)
	for i := range events {
		fresh.eachKey(&events[i], func(k string) { counts[k]++ })
	}
	for i := range events {
		e := &events[i]
		en := entry{ts: e.CreatedAt, author: fresh.authors[e.PubKey], kind: e.Kind, id: e.ID}
		fresh.eachKey(e, func(k string) {
			p := fresh.postings[k]
			if p == nil {
				p = make([]entry, 0, counts[k])
			}
			fresh.postings[k] = append(p, en)
		})
	}
	ix.mu.Lock()
	ix.blocks, ix.n, ix.authors, ix.authorKeys, ix.postings = fresh.blocks, fresh.n, fresh.authors, fresh.authorKeys, fresh.postings
	ix.mu.Unlock()
}

// Op is one write, for Replay.
type Op struct {
	Add   bool // else a removal
	Event Event
}

// Replay applies ops in order under one lock: the writes the store logged
// while Load's input was being read.
func (ix *Index) Replay(ops []Op) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i := range ops {
		if ops[i].Add {
			ix.add(&ops[i].Event)
		} else {
			ix.remove(&ops[i].Event)
		}
	}
}

// MemoryBytes estimates the index's heap: entries with their block slack,
// postings, interned authors and map overhead.
func (ix *Index) MemoryBytes() int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	const entrySize, mapEntry = 44, 48
	var n int64
	for _, b := range ix.blocks {
		n += int64(cap(b))*entrySize + 24
	}
	for k, p := range ix.postings {
		n += int64(len(k)) + 16 + 24 + mapEntry + int64(cap(p))*entrySize
	}
	n += int64(len(ix.authorKeys)) * (32 + 32 + 4 + mapEntry)
	return n
}
