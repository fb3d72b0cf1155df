package negindex

import (
	"encoding/hex"
	"slices"
	"weak"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// Select returns the (created_at, id) pairs of the indexed events f matches,
// as a sealed negentropy storage. ok is false when the index cannot answer f
// exactly (the caller then queries its store); err is ErrTooMany when more
// than max events match.
func (ix *Index) Select(f nostr.Filter, max int) (s *Snapshot, ok bool, err error) {
	m, ok := ix.compile(f)
	if !ok {
		return nil, false, nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	whole := m.whole()
	if whole {
		if ix.n > max {
			return nil, true, ErrTooMany
		}
		if sh := ix.wholeSet(); sh != nil {
			return &Snapshot{items: sh.items, sh: sh}, true, nil
		}
	}
	var items []item
	visited := 0
	if m.tags != nil {
		items, err = ix.selectTagged(m, max, &visited)
	} else {
		items, err = ix.selectWalk(m, max, &visited)
	}
	if err != nil {
		return nil, true, err
	}
	s = newSnapshot(items)
	s.visited = visited
	if whole {
		ix.keepWholeSet(s.sh)
	}
	return s, true, nil
}

// whole reports whether m matches every indexed event.
func (m *matcher) whole() bool {
	return !m.none && m.tags == nil && m.kinds == nil && m.authors == nil && m.since == 0 && m.until == 0xffffffff
}

// wholeSet is the whole-store set a snapshot made since the last change
// still holds, or nil. Concurrent whole-store sessions (peers syncing
// after a restart, or at the same hour) then share one copy of the pairs
// and of their running sums: at 1,000,000 events each copy is 36 MB and
// ~45 ms of CPU (issue 27 part 3). It is held strongly for WholeHold
// after the last whole-store Select, within a share of the memory limit
// (hold.go), and weakly after that: once no session holds it either, it is
// garbage. Called with ix.mu held.
func (ix *Index) wholeSet() *shared {
	ix.cacheMu.Lock()
	defer ix.cacheMu.Unlock()
	if ix.wholeVersion != ix.version {
		return nil
	}
	sh := ix.whole.Value()
	if sh != nil {
		ix.holdLocked(sh)
	}
	return sh
}

// keepWholeSet remembers sh as the set of the index's current version.
// Called with ix.mu held.
func (ix *Index) keepWholeSet(sh *shared) {
	ix.cacheMu.Lock()
	defer ix.cacheMu.Unlock()
	ix.whole, ix.wholeVersion = weak.Make(sh), ix.version
	ix.holdLocked(sh)
}

// matcher is a filter compiled against the index.
type matcher struct {
	none         bool // an author or kind list nothing indexed can match
	kinds        []uint16
	authors      []uint32
	since, until uint32
	// tags: one set of postings keys per letter, ANDed across letters.
	tags [][]tkey
}

func (ix *Index) compile(f nostr.Filter) (m matcher, ok bool) {
	if f.IDs != nil || f.Limit != 0 || f.LimitZero || f.Search != "" {
		return m, false
	}
	// An empty list is "match nothing" to Filter.Matches but "no
	// condition" to some stores: leave such filters to the store.
	if (f.Kinds != nil && len(f.Kinds) == 0) || (f.Authors != nil && len(f.Authors) == 0) {
		return m, false
	}
	m.until = 0xffffffff
	if f.Since != nil {
		if *f.Since > 0xffffffff {
			m.none = true
		} else if *f.Since > 0 {
			m.since = uint32(*f.Since)
		}
	}
	if f.Until != nil {
		if *f.Until < 0 {
			m.none = true
		} else if *f.Until < 0xffffffff {
			m.until = uint32(*f.Until)
		}
	}
	for letter, values := range f.Tags {
		if !ix.letters[letter] || len(values) == 0 {
			return m, false
		}
		keys := make([]tkey, 0, len(values))
		for _, v := range values {
			keys = append(keys, tagKey(letter, v))
		}
		m.tags = append(m.tags, keys)
	}
	for _, k := range f.Kinds {
		if k >= 0 && k <= 0xffff {
			m.kinds = append(m.kinds, uint16(k))
		}
	}
	if f.Kinds != nil && len(m.kinds) == 0 {
		m.none = true
	}
	if f.Authors != nil {
		ix.mu.RLock()
		for _, a := range f.Authors {
			if !nip34.IsHex64(a) {
				continue
			}
			var pk [32]byte
			hex.Decode(pk[:], []byte(a))
			if n, known := ix.authors[pk]; known {
				m.authors = append(m.authors, n)
			}
		}
		ix.mu.RUnlock()
		if len(m.authors) == 0 {
			m.none = true
		}
	}
	return m, true
}

func (m *matcher) matches(e *entry) bool {
	if e.ts < m.since || e.ts > m.until {
		return false
	}
	if m.kinds != nil && !slices.Contains(m.kinds, e.kind) {
		return false
	}
	if m.authors != nil && !slices.Contains(m.authors, e.author) {
		return false
	}
	return true
}

// selectWalk walks the entries in order from since to until.
func (ix *Index) selectWalk(m matcher, max int, visited *int) ([]item, error) {
	if m.none {
		return nil, nil
	}
	var zero [32]byte
	bi, _, _ := ix.find(m.since, &zero)
	// Without conditions the result is every entry in the window: size it
	// once instead of growing it.
	var items []item
	if m.kinds == nil && m.authors == nil && m.since == 0 && m.until == 0xffffffff {
		if ix.n > max {
			return nil, ErrTooMany
		}
		items = make([]item, 0, ix.n)
	}
	for ; bi < len(ix.blocks); bi++ {
		*visited += len(ix.blocks[bi])
		for _, slot := range ix.blocks[bi] {
			e := &ix.slots[slot]
			if e.ts > m.until {
				return items, nil
			}
			if !m.matches(e) {
				continue
			}
			if len(items) == max {
				return nil, ErrTooMany
			}
			items = append(items, item{ts: e.ts, id: e.id})
		}
	}
	return items, nil
}

// selectTagged unions the postings of the first letter's values and keeps
// the entries every other letter's postings also hold.
func (ix *Index) selectTagged(m matcher, max int, visited *int) ([]item, error) {
	if m.none {
		return nil, nil
	}
	// Start from the letter with the fewest postings.
	best, bestN := 0, -1
	for i, keys := range m.tags {
		n := 0
		var buf [1]uint32
		for _, k := range keys {
			n += len(ix.postings.slots(k, &buf))
		}
		if bestN < 0 || n < bestN {
			best, bestN = i, n
		}
	}
	var others []map[uint32]struct{}
	for i, keys := range m.tags {
		if i == best {
			continue
		}
		set := make(map[uint32]struct{})
		var buf [1]uint32
		for _, k := range keys {
			slots := ix.postings.slots(k, &buf)
			*visited += len(slots)
			for _, slot := range slots {
				set[slot] = struct{}{}
			}
		}
		others = append(others, set)
	}
	items := make([]item, 0, min(bestN, max+1))
	var buf [1]uint32
	for _, k := range m.tags[best] {
		slots := ix.postings.slots(k, &buf)
		*visited += len(slots)
	postings:
		for _, slot := range slots {
			e := &ix.slots[slot]
			if !m.matches(e) {
				continue
			}
			for _, set := range others {
				if _, in := set[slot]; !in {
					continue postings
				}
			}
			items = append(items, item{ts: e.ts, id: e.id})
		}
	}
	slices.SortFunc(items, compareItems)
	// An event carrying several of the values is in several postings.
	items = slices.CompactFunc(items, func(a, b item) bool { return a.ts == b.ts && a.id == b.id })
	if len(items) > max {
		return nil, ErrTooMany
	}
	return items, nil
}
