package store

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/nbd-wtf/go-nostr"
)

// Queries of the badger backend, streamed page by page.
//
// A query is planned onto one index (plan): the id index for ids
// (collectIDs, badger_query_id.go), else the
// narrowest tag index whose values are all indexed, else authors and kinds,
// authors, kinds, or created_at alone. Each listed value is one source, a
// run of index keys in created_at order; the sources are merged newest
// first (by created_at, then serial). Every candidate's record is read and
// the event checked against the whole filter with nostr.Filter.Matches, so
// what the index cannot tell (other conditions, an `A` tag sharing an `a`
// tag's key, values longer than a key holds) is decided exactly as NIP-01
// says.
//
// Results are read a page at a time, each page in its own read
// transaction, and sent only after that transaction ended; the next page
// resumes after the last key read. A client that reads slowly therefore
// holds one page of events (pageEvents, pageBytes), not its whole result,
// and no transaction or iterator while it waits, so it pins neither
// memtables nor table files (issue 27 part 2, audit F06). A page ends
// after pageScan keys too, so a filter that matches few of the keys it
// scans does not hold a transaction for long either.
const (
	pageEvents = 128
	pageBytes  = 256 << 10
	pageScan   = 4096
)

// maxPairSources bounds the (author, kind) sources of one query; past it
// the author index is read and kinds checked on the records.
const maxPairSources = 64

// source is one run of index keys: those starting with prefix and exactly
// len(prefix)+8 bytes long (created_at, serial).
type source struct {
	prefix []byte
}

// queryPlan is how one filter is read.
type queryPlan struct {
	f       nostr.Filter
	sources []source
	since   uint32
	until   uint32
	// noContent leaves stubs as they are stored (the writer's lookups).
	noContent bool
	// dropContent returns every event with an empty Content, reading no
	// content record (WithoutContent).
	dropContent bool
	// ids lists the raw ids of an ids filter, read by collectIDs instead
	// of sources; authors the raw authors of the filter, for quickMatch.
	ids, authors [][32]byte
}

// plan chooses the index for f; ok is false when f can match nothing.
func plan(f nostr.Filter) (p queryPlan, ok bool) {
	p.f = f
	p.until = ^uint32(0)
	if f.Until != nil {
		if *f.Until < 0 {
			return p, false
		}
		if *f.Until < nostr.Timestamp(p.until) {
			p.until = uint32(*f.Until)
		}
	}
	if f.Since != nil && *f.Since > 0 {
		if *f.Since > nostr.Timestamp(^uint32(0)) {
			return p, false
		}
		p.since = uint32(*f.Since)
	}
	if p.since > p.until {
		return p, false
	}
	for _, a := range f.Authors {
		if raw, ok := hex32(a); ok {
			p.authors = append(p.authors, raw)
		}
	}
	if f.IDs != nil {
		for _, id := range f.IDs {
			if raw, ok := hex32(id); ok && !slices.Contains(p.ids, raw) {
				p.ids = append(p.ids, raw)
			}
		}
		return p, len(p.ids) > 0
	}
	for _, vs := range f.Tags {
		if vs != nil && len(vs) == 0 {
			return p, false // an empty list matches nothing (Filter.Matches)
		}
	}
	if (f.Kinds != nil && len(f.Kinds) == 0) || (f.Authors != nil && len(f.Authors) == 0) {
		return p, false
	}
	letter, values, goodness := narrowestTag(f)
	if letter != "" && (goodness >= 3 || (len(f.Authors) == 0 && len(f.Kinds) == 0)) {
		for _, v := range values {
			p.sources = append(p.sources, source{prefix: tagPrefix(nil, letter[0], v)})
		}
		return p, true
	}
	switch {
	case len(f.Authors) > 0 && len(f.Kinds) > 0 && len(f.Authors)*len(f.Kinds) <= maxPairSources:
		for _, a := range f.Authors {
			pk8, ok := hexPrefix8(a)
			if !ok {
				continue
			}
			for _, k := range f.Kinds {
				if k < 0 || k > 0xffff {
					continue
				}
				pre := append(append([]byte{keyPubkeyKind}, pk8[:]...), byte(k>>8), byte(k))
				p.sources = append(p.sources, source{prefix: pre})
			}
		}
	case len(f.Authors) > 0:
		for _, a := range f.Authors {
			if pk8, ok := hexPrefix8(a); ok {
				p.sources = append(p.sources, source{prefix: append([]byte{keyPubkey}, pk8[:]...)})
			}
		}
	case len(f.Kinds) > 0:
		for _, k := range f.Kinds {
			if k >= 0 && k <= 0xffff {
				p.sources = append(p.sources, source{prefix: []byte{keyKind, byte(k >> 8), byte(k)}})
			}
		}
	default:
		p.sources = []source{{prefix: []byte{keyCreatedAt}}}
	}
	return p, len(p.sources) > 0
}

func hexPrefix8(s string) (pk8 [8]byte, ok bool) {
	full, ok := hex32(s)
	copy(pk8[:], full[:8])
	return pk8, ok
}

// narrowestTag picks the tag letter to read, as the library did: e, E and q
// name one event; a, A, i, I, g and r a repository or other fixed thing; d
// with authors an address; h, t, l, k and K categories; p broad. Letters
// with a value no index key holds (empty, or over 100 bytes) are skipped.
func narrowestTag(f nostr.Filter) (letter string, values []string, goodness int) {
	for key, vs := range f.Tags {
		if len(key) != 1 || len(vs) == 0 {
			continue
		}
		if slices.ContainsFunc(vs, func(v string) bool { return len(v) == 0 || len(v) > maxIndexedTagValue }) {
			continue
		}
		g := 1
		switch key {
		case "e", "E", "q":
			g = 9
		case "a", "A", "i", "I", "g", "r":
			g = 8
		case "d":
			g = 4
			if len(f.Authors) > 0 {
				g = 7
			}
		case "h", "t", "l", "k", "K":
			g = 6
		case "p":
			g = 2
		}
		if g > goodness || (g == goodness && key < letter) {
			letter, values, goodness = key, vs, g
		}
	}
	return letter, values, goodness
}

// cursor is a position in the merged order: the next page reads keys
// strictly older than (ts, serial).
type cursor struct {
	ts, serial uint32
	set        bool
}

func (c cursor) after(ts, serial uint32) bool {
	return !c.set || ts < c.ts || (ts == c.ts && serial < c.serial)
}

// head is one source's current key.
type head struct {
	it         *badger.Iterator
	src        *source
	ts, serial uint32
}

type heads []*head

func (h heads) Len() int { return len(h) }
func (h heads) Less(i, j int) bool {
	return h[i].ts > h[j].ts || (h[i].ts == h[j].ts && h[i].serial > h[j].serial)
}
func (h heads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heads) Push(x any)   { *h = append(*h, x.(*head)) }
func (h *heads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// advance moves hd to its source's next key in range; false when the
// source is exhausted.
func (p *queryPlan) advance(hd *head, c cursor) bool {
	for ; hd.it.Valid(); hd.it.Next() {
		k := hd.it.Item().Key()
		if len(k) != len(hd.src.prefix)+8 {
			continue // a longer tag value that starts with this one
		}
		ts := binary.BigEndian.Uint32(k[len(k)-8:])
		serial := binary.BigEndian.Uint32(k[len(k)-4:])
		if ts > p.until || !c.after(ts, serial) {
			continue
		}
		if ts < p.since {
			return false
		}
		hd.ts, hd.serial = ts, serial
		return true
	}
	return false
}

// page reads from c on in txn and calls emit for each matching event, newest
// first, until emit returns false, the page is full or the sources are
// exhausted. It returns where the next page starts and whether there is
// more to read.
func (s *badgerStore) page(txn *badger.Txn, p *queryPlan, c cursor, emit func(evt *nostr.Event, serial uint32, size int) bool) (next cursor, more bool, err error) {
	hs := make(heads, 0, len(p.sources))
	defer func() {
		for _, hd := range hs {
			hd.it.Close()
		}
	}()
	var its []*badger.Iterator
	defer func() {
		for _, it := range its {
			it.Close()
		}
	}()
	for i := range p.sources {
		src := &p.sources[i]
		it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: src.prefix})
		seek := tsSerial(slices.Clip(src.prefix), p.until, ^uint32(0))
		if c.set && c.ts <= p.until {
			seek = tsSerial(slices.Clip(src.prefix), c.ts, c.serial)
		}
		it.Seek(seek)
		hd := &head{it: it, src: src}
		if p.advance(hd, c) {
			hs = append(hs, hd)
		} else {
			its = append(its, it)
		}
	}
	heap.Init(&hs)
	scanned, sent, bytesRead := 0, 0, 0
	var last cursor
	for len(hs) > 0 {
		hd := hs[0]
		ts, serial := hd.ts, hd.serial
		if last.set && ts == last.ts && serial == last.serial {
			// the same event through a second source (two of its tag
			// values, or authors sharing 8 bytes)
		} else {
			last = cursor{ts: ts, serial: serial, set: true}
			evt, size, err := s.candidate(txn, p, serial)
			if err != nil {
				return c, false, err
			}
			scanned++
			if evt != nil {
				sent++
				bytesRead += size
				if !emit(evt, serial, size) {
					return last, false, nil
				}
			}
		}
		hd.it.Next()
		if p.advance(hd, cursor{ts: ts, serial: serial, set: true}) {
			heap.Fix(&hs, 0)
		} else {
			heap.Pop(&hs)
			its = append(its, hd.it)
		}
		if len(hs) > 0 && (sent >= pageEvents || bytesRead >= pageBytes || scanned >= pageScan) {
			return last, true, nil
		}
	}
	return last, false, nil
}

// candidate reads the record of serial and returns its event if it matches
// the filter (with its content put back), and the record's size.
func (s *badgerStore) candidate(txn *badger.Txn, p *queryPlan, serial uint32) (*nostr.Event, int, error) {
	var key [5]byte
	key[0] = keyRaw
	binary.BigEndian.PutUint32(key[1:], serial)
	s.recordReads.Add(1)
	item, err := txn.Get(key[:])
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, 0, nil // an index key whose record is gone
	}
	if err != nil {
		return nil, 0, err
	}
	var evt *nostr.Event
	size := 0
	err = item.Value(func(raw []byte) error {
		evt, size = s.matchRecord(p, serial, raw)
		return nil
	})
	if err != nil || evt == nil {
		return nil, 0, err
	}
	n, err := s.withContent(txn, p, evt)
	return evt, size + n, err
}

// matchRecord decodes the record of serial if its event matches the
// filter; it returns the event (its content maybe a stub) and the record's
// size.
func (s *badgerStore) matchRecord(p *queryPlan, serial uint32, raw []byte) (*nostr.Event, int) {
	h := recordHead(raw)
	if !h.ok() || !p.quickMatch(h) {
		return nil, 0
	}
	e := &nostr.Event{}
	if err := decodeRecord(raw, e); err != nil {
		s.log.Error("skipping an unreadable event record", "serial", serial, "error", err)
		return nil, 0
	}
	if !p.f.Matches(e) {
		return nil, 0
	}
	return e, len(raw)
}

// withContent puts back the content of a matching event whose stored
// content is a stub, unless the plan wants stubs or no content at all
// (dropContent: the content is emptied); it returns the content record's
// size.
func (s *badgerStore) withContent(txn *badger.Txn, p *queryPlan, evt *nostr.Event) (int, error) {
	if p.dropContent {
		evt.Content = ""
		return 0, nil
	}
	if !isStub(evt.Content) || p.noContent {
		return 0, nil
	}
	return s.fillContent(txn, evt)
}

// quickMatch rejects records by id, kind and author before decoding them.
func (p *queryPlan) quickMatch(h recordHead) bool {
	if p.ids != nil && !slices.ContainsFunc(p.ids, func(id [32]byte) bool { return bytes.Equal(id[:], h.id()) }) {
		return false
	}
	if p.f.Kinds != nil && !slices.Contains(p.f.Kinds, int(h.kind())) {
		return false
	}
	if p.f.Authors != nil && !slices.ContainsFunc(p.authors, func(a [32]byte) bool { return bytes.Equal(a[:], h.pubkey()) }) {
		return false
	}
	return true
}

// fillContent puts back the content of an event whose stored content is a
// stub, from its content record in txn; it returns the record's size.
func (s *badgerStore) fillContent(txn *badger.Txn, evt *nostr.Event) (int, error) {
	prefix := largePrefix
	if evt.Content == packedStub {
		prefix = packedPrefix
	}
	k, err := contentKey(prefix, evt.ID)
	if err != nil {
		return 0, nil
	}
	item, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil // an event whose real content is a stub: served as it is
	}
	if err != nil {
		return 0, fmt.Errorf("read the content record of %s: %w", evt.ID, err)
	}
	n := 0
	err = item.Value(func(v []byte) error {
		n = len(v)
		if prefix == largePrefix {
			evt.Content = string(v)
			return nil
		}
		content, err := unpackContent(v)
		if err != nil {
			return fmt.Errorf("unpack the content of %s: %w", evt.ID, err)
		}
		evt.Content = content
		return nil
	})
	return n, err
}

// query streams up to limit events matching f, newest first, a page
// per read transaction (see pageEvents). An ids filter is read in one page
// and sorted, since the id index has no created_at.
func (s *badgerStore) query(ctx context.Context, f nostr.Filter, limit int) (chan *nostr.Event, error) {
	p, ok := plan(f)
	if !ok || limit <= 0 || f.Search != "" {
		ch := make(chan *nostr.Event)
		close(ch)
		return ch, nil
	}
	p.dropContent = withoutContent(ctx)
	if p.ids != nil {
		evts, err := s.collectIDs(&p, limit)
		if err != nil {
			return nil, err
		}
		// The events are read already: a channel holding all of them
		// (at most the filter's ids) hands them over without a goroutine
		// and a context switch per event; the write path's lookups by id
		// (the duplicate check, policy's and GRASP-08's related events)
		// are two or three per event (issue 27 part 5).
		ch := make(chan *nostr.Event, len(evts))
		for _, evt := range evts {
			ch <- evt
		}
		close(ch)
		return ch, nil
	}
	ch := make(chan *nostr.Event)
	go func() {
		defer close(ch)
		c, left := cursor{}, limit
		for left > 0 && ctx.Err() == nil {
			var batch []*nostr.Event
			var more bool
			err := s.db.View(func(txn *badger.Txn) error {
				var err error
				c, more, err = s.page(txn, &p, c, func(evt *nostr.Event, _ uint32, _ int) bool {
					batch = append(batch, evt)
					return len(batch) < left
				})
				return err
			})
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, badger.ErrDBClosed) {
					s.log.Error("query failed", "filter", f.String(), "error", err)
				}
				return
			}
			for _, evt := range batch {
				select {
				case ch <- evt:
				case <-ctx.Done():
					return
				}
			}
			left -= len(batch)
			if !more {
				return
			}
		}
	}()
	return ch, nil
}

// collectIDs reads the events of an ids filter, newest first (by
// created_at, then serial), in one read transaction: the id index has no
// created_at to merge on, and an ids filter is small.
func (s *badgerStore) collectIDs(p *queryPlan, limit int) ([]*nostr.Event, error) {
	type hit struct {
		evt    *nostr.Event
		serial uint32
	}
	var hits []hit
	// The ids the id filter rules out are not stored; when it rules out
	// all of them (a save's duplicate check, issue 27 part 5) no read
	// transaction is opened.
	ids := make([][32]byte, 0, len(p.ids))
	for _, id := range p.ids {
		if !s.ids.absent(id[:8]) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.SortFunc(ids, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) }) // one forward pass
	err := s.db.View(func(txn *badger.Txn) error {
		r := s.newIDReader(txn)
		defer r.close()
		for i := range ids {
			var evt *nostr.Event
			var serial uint32
			if _, err := r.find(&ids[i], func(sr uint32, rec []byte) error {
				evt, _ = s.matchRecord(p, sr, rec)
				serial = sr
				return nil
			}); err != nil {
				return err
			}
			if evt == nil {
				continue
			}
			if _, err := s.withContent(txn, p, evt); err != nil {
				return err
			}
			hits = append(hits, hit{evt, serial})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.evt.CreatedAt != b.evt.CreatedAt {
			return cmp.Compare(b.evt.CreatedAt, a.evt.CreatedAt)
		}
		return cmp.Compare(b.serial, a.serial)
	})
	out := make([]*nostr.Event, 0, min(len(hits), limit))
	for _, h := range hits[:min(len(hits), limit)] {
		out = append(out, h.evt)
	}
	return out, nil
}
