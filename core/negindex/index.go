// Package negindex owns the in-memory negentropy index: for every stored
// event its (created_at, id) pair, kind and author, kept in (created_at, id)
// order, plus postings for the tag letters GRASP-02 sync filters on. A
// NIP-77 session over the whole store (or over kinds, authors, a time window
// or those tags) is then a walk over compact entries, not a query that
// decodes every event from disk (issue 15 part 1: that decode was 67 % of a
// session's CPU).
//
// Whole-store sessions opened while the index does not change share one
// set of pairs (select.go). The index holds that set strongly for
// WholeHold after the last whole-store session opened, on its clock
// (SetClock), while it takes at most a quarter of the runtime's memory
// limit, and lets it go at once on any change (hold.go); after that only a
// running session keeps it. Held only weakly, it was made again after every
// collection: 1.9 s of server CPU per in-sync session at 5,000,000 events.
//
// A Snapshot is also what grasp's NIP-77 client reconciles from
// (SnapshotBuilder): its fingerprints cost the same on either side. Both
// sides run the package's own engine over it (Engine, engine.go): NIP-77's
// protocol v1 on raw ids, sending what go-nostr's engine sends.
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
	"weak"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/idtable"
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

// blockSize bounds one sorted block of slot numbers. Inserting into a
// block moves at most this many (2 KB), so out-of-order inserts (sync
// catch-up of old events) stay cheap at a million events.
const blockSize = 512

// entry is one indexed event: 44 bytes, kept once in Index.slots.
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
//
// Every event's entry lives once, in slots; the order (blocks) and the
// postings hold 4-byte slot numbers. A million events with two indexed tag
// values each take ~44 MB of entries, 4 MB of order and 8 MB of postings,
// plus the postings' keys (issue 27 part 2; each posting was a 44-byte
// copy of the entry before).
type Index struct {
	mu      sync.RWMutex
	letters map[string]bool
	slots   []entry
	free    []uint32   // slots of removed entries, reused first
	blocks  [][]uint32 // slot numbers, each block sorted and non-empty; blocks in order
	n       int
	// authors interns pubkeys; they are never forgotten (bounded by the
	// authors ever stored, 36 B each plus the map).
	authors    map[[32]byte]uint32
	authorKeys [][32]byte
	// postings maps tagKey(letter, value) to the slots of the entries
	// carrying it, in no particular order.
	postings postings
	// ids finds an entry's slot by its id: postings keep a value that is
	// an indexed id as that slot (postings.go).
	ids idtable.Table
	// version counts the changes (under mu); whole is the whole-store set
	// last selected at wholeVersion (select.go), under cacheMu; held is
	// that set again, strongly, for WholeHold after the last whole-store
	// Select (hold.go).
	version      uint64
	cacheMu      sync.Mutex
	whole        weak.Pointer[shared]
	wholeVersion uint64
	hold         wholeHold
}

// New returns an empty index over the given tag letters (DefaultTagLetters
// when nil).
func New(letters []string) *Index {
	if letters == nil {
		letters = DefaultTagLetters
	}
	ix := &Index{
		letters: make(map[string]bool, len(letters)),
		authors: make(map[[32]byte]uint32),
		ids:     idtable.New(),
		hold:    wholeHold{clk: clock.New(), d: WholeHold, budget: wholeHoldBudget},
	}
	ix.postings = newPostings(ix, letters)
	for _, l := range letters {
		ix.letters[l] = true
	}
	return ix
}

// slotIDs is Index.slots as the id table reads them.
type slotIDs []entry

func (s *slotIDs) ID(slot uint32) *[32]byte { return &(*s)[slot].id }

func (ix *Index) idView() idtable.IDs { return (*slotIDs)(&ix.slots) }

// Len is the number of indexed events.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

// Indexes reports whether tags of this letter are indexed (their values
// need not be read otherwise).
func (ix *Index) Indexes(letter string) bool { return ix.letters[letter] }

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
func (ix *Index) eachKey(e *Event, fn func(k tkey)) {
	// seen starts in a buffer on the stack: grown from nil it was a heap
	// slice per event, most of what loading a store's index allocated
	// (issue 27 part 2, the start-up transient). Events with more
	// indexed tags than the buffer holds grow it as before.
	var buf [8]tkey
	seen := buf[:0]
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
	bi, j, found := ix.find(en.ts, &en.id)
	if found {
		return
	}
	slot := ix.alloc(en)
	ix.changed()
	ix.insertAt(bi, j, slot)
	if _, dup := ix.ids.Find(ix.idView(), &en.id); !dup {
		ix.ids.Insert(ix.idView(), slot)
	}
	ix.eachKey(e, func(k tkey) { ix.postings.add(k, slot) })
}

// alloc stores en in a free slot or a new one.
func (ix *Index) alloc(en entry) uint32 {
	if r := ix.postings.released; len(r) > 0 {
		for _, s := range r {
			ix.slots[s] = entry{}
		}
		ix.free = append(ix.free, r...)
		ix.postings.released = r[:0]
	}
	if n := len(ix.free); n > 0 {
		slot := ix.free[n-1]
		ix.free = ix.free[:n-1]
		ix.slots[slot] = en
		return slot
	}
	ix.slots = append(ix.slots, en)
	return uint32(len(ix.slots) - 1)
}

// Remove drops e (found by created_at and id); removing what is not indexed
// changes nothing.
func (ix *Index) Remove(e Event) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.remove(&e)
}

func (ix *Index) remove(e *Event) {
	bi, j, found := ix.find(e.CreatedAt, &e.ID)
	if !found {
		return
	}
	ix.changed()
	slot := ix.blocks[bi][j]
	b := slices.Delete(ix.blocks[bi], j, j+1)
	if len(b) == 0 {
		ix.blocks = slices.Delete(ix.blocks, bi, bi+1)
	} else {
		ix.blocks[bi] = b
	}
	ix.n--
	// Out of the id table first, so that no merge the removals below set
	// off makes a new ref to the slot.
	if s, ok := ix.ids.Find(ix.idView(), &ix.slots[slot].id); ok && s == slot {
		ix.ids.Remove(ix.idView(), slot)
	}
	ix.eachKey(e, func(k tkey) { ix.postings.remove(k, slot) })
	if !ix.postings.unref(slot) {
		ix.slots[slot] = entry{}
		ix.free = append(ix.free, slot)
	}
}

// find locates (ts, id): its block and position, or where it would go.
func (ix *Index) find(ts uint32, id *[32]byte) (bi, j int, found bool) {
	if len(ix.blocks) == 0 {
		return 0, 0, false
	}
	// The first block whose last entry is >= (ts, id); the last block if none.
	bi, _ = slices.BinarySearchFunc(ix.blocks, struct{}{}, func(b []uint32, _ struct{}) int {
		return ix.slots[b[len(b)-1]].less(ts, id)
	})
	if bi == len(ix.blocks) {
		bi--
	}
	j, found = slices.BinarySearchFunc(ix.blocks[bi], struct{}{}, func(s uint32, _ struct{}) int {
		return ix.slots[s].less(ts, id)
	})
	return bi, j, found
}

func (ix *Index) insertAt(bi, j int, slot uint32) {
	ix.n++
	if len(ix.blocks) == 0 {
		ix.blocks = append(ix.blocks, append(make([]uint32, 0, 16), slot))
		return
	}
	b := slices.Insert(ix.blocks[bi], j, slot)
	if len(b) > blockSize {
		half := len(b) / 2
		right := append(make([]uint32, 0, blockSize), b[half:]...)
		left := append(make([]uint32, 0, blockSize), b[:half]...)
		ix.blocks[bi] = left
		ix.blocks = slices.Insert(ix.blocks, bi+1, right)
	} else {
		ix.blocks[bi] = b
	}
}

// A Loader builds an index from what a store holds, one event at a time in
// any order, without keeping the events: Finish sorts once and swaps the
// result into the index.
type Loader struct {
	ix    *Index
	fresh *Index
}

// NewLoader starts replacing ix's contents.
func (ix *Index) NewLoader() *Loader {
	fresh := New(nil)
	fresh.letters = ix.letters
	fresh.postings.hexLetters = ix.postings.hexLetters
	return &Loader{ix: ix, fresh: fresh}
}

// Add indexes e (a repeated (created_at, id) is dropped by Finish).
func (l *Loader) Add(e *Event) {
	f := l.fresh
	slot := uint32(len(f.slots))
	f.slots = append(f.slots, f.entryOf(e))
	f.eachKey(e, func(k tkey) { f.postings.add(k, slot) })
}

// Finish orders the loaded entries into full blocks (loaded blocks are most
// of a large index, so no slack is kept in them), trims the postings and
// installs the result in the index.
func (l *Loader) Finish() {
	f := l.fresh
	f.slots = slices.Clip(f.slots)
	order := make([]uint32, len(f.slots))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return f.slots[a].less(f.slots[b].ts, &f.slots[b].id) })
	// Repeats: keep the first slot of each (created_at, id), free the rest.
	var dropped map[uint32]bool
	order = slices.CompactFunc(order, func(a, b uint32) bool {
		if f.slots[a].ts == f.slots[b].ts && f.slots[a].id == f.slots[b].id {
			if dropped == nil {
				dropped = map[uint32]bool{}
			}
			dropped[a] = true
			return true
		}
		return false
	})
	for start := 0; start < len(order); start += blockSize {
		end := min(start+blockSize, len(order))
		f.blocks = append(f.blocks, slices.Clone(order[start:end]))
	}
	f.n = len(order)
	view := f.idView()
	f.ids.Reserve(view, len(order))
	for _, s := range order {
		if _, dup := f.ids.Find(view, &f.slots[s].id); !dup {
			f.ids.Insert(view, s)
		}
	}
	order = nil
	f.postings.dropSlots(dropped)
	f.postings.compact()
	for s := range dropped {
		f.slots[s] = entry{}
		f.free = append(f.free, s)
	}
	ix := l.ix
	ix.mu.Lock()
	ix.changed()
	ix.slots, ix.free, ix.blocks, ix.n = f.slots, f.free, f.blocks, f.n
	ix.authors, ix.authorKeys, ix.postings, ix.ids = f.authors, f.authorKeys, f.postings, f.ids
	ix.postings.ix = ix
	ix.mu.Unlock()
}

// Load replaces the index's contents with events, in any order.
func (ix *Index) Load(events []Event) {
	l := ix.NewLoader()
	for i := range events {
		l.Add(&events[i])
	}
	l.Finish()
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

// MemoryBytes estimates the index's heap: entries, order with its block
// slack, postings, interned authors and map overhead.
func (ix *Index) MemoryBytes() int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	const entrySize, mapEntry = 44, 48
	n := int64(cap(ix.slots))*entrySize + int64(cap(ix.free))*4
	for _, b := range ix.blocks {
		n += int64(cap(b))*4 + 24
	}
	n += ix.postings.bytes() + int64(ix.ids.Bytes())
	n += int64(len(ix.authorKeys)) * (32 + 32 + 4 + mapEntry)
	return n
}
