package store

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// Finding a stored event by its id: the one owner of that lookup in the
// badger backend, used by ids filters (collectIDs), the writer's duplicate
// check (batchTxn.stored) and deletion (batchTxn.delete).
//
// The id index (key 2) holds an id's first 8 bytes and the record's
// serial; the record holds the whole id, so every candidate's record is
// read and compared. One forward iterator over the id index serves all the
// lookups of a transaction: building an iterator costs one table iterator
// per memtable, per level-0 table and per level (badger reads no bloom
// filter for a prefix), so an ids filter of five ids built five of them,
// in reverse, before (issue 27 part 3).
//
// Before the iterator, the id filter (idFilter, below) is asked: an id it
// has never seen is not stored, and most ids looked up are new (every
// save's duplicate check), so most lookups read nothing. A seek over the
// id index positions one table iterator per memtable, level-0 table and
// level and reads a block of each; at a million events the duplicate check
// took two thirds of the single writer's time (docs/benchmarks.md).
type idReader struct {
	s   *badgerStore
	txn *badger.Txn
	it  *badger.Iterator
}

func (s *badgerStore) newIDReader(txn *badger.Txn) *idReader { return &idReader{s: s, txn: txn} }

// close ends the reader's iterator; a read-write transaction allows one
// at a time.
func (r *idReader) close() {
	if r.it != nil {
		r.it.Close()
		r.it = nil
	}
}

// find calls fn with the serial and record of the stored event whose id is
// id, and reports whether there was one. rec is valid only during fn.
func (r *idReader) find(id *[32]byte, fn func(serial uint32, rec []byte) error) (found bool, err error) {
	if r.s.ids.absent(id[:8]) {
		return false, nil
	}
	// The serials the filter knows for these 8 bytes: a point lookup of each
	// record instead of a seek in the id index (~18 µs of the ~80 an id cost
	// at a million events, issue 27 part 3). An id whose serial is not
	// among them (one of two stored ids sharing 8 bytes) is still found by
	// the seek below.
	var buf [4]uint32
	for _, serial := range r.s.ids.serials(id[:8], buf[:0]) {
		if found, err := r.record(serial, id, fn); err != nil || found {
			return found, err
		}
	}
	r.s.idSeeks.Add(1)
	if r.it == nil {
		r.it = r.txn.NewIterator(badger.IteratorOptions{Prefix: []byte{keyID}})
	}
	var prefix [9]byte
	prefix[0] = keyID
	copy(prefix[1:], id[:8])
	for r.it.Seek(prefix[:]); r.it.ValidForPrefix(prefix[:]); r.it.Next() {
		k := r.it.Item().Key()
		if len(k) != len(prefix)+4 {
			continue
		}
		found, err := r.record(binary.BigEndian.Uint32(k[len(prefix):]), id, fn)
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}

// record calls fn with the record under serial if it is the event whose id
// is id, and reports whether it was.
func (r *idReader) record(serial uint32, id *[32]byte, fn func(serial uint32, rec []byte) error) (found bool, err error) {
	item, err := r.txn.Get(rawKey(serial))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil // an index key (or a serial hint) whose record is gone
	}
	if err != nil {
		return false, err
	}
	err = item.Value(func(v []byte) error {
		if h := recordHead(v); !h.ok() || string(h.id()) != string(id[:]) {
			return nil // another id with the same first 8 bytes
		}
		found = true
		return fn(serial, v)
	})
	return found, err
}

// idFilter is a Bloom filter over the first 8 bytes of every id the store
// has held since it opened: absent(id) true means no stored event has that
// id. It is loaded from the id index in the background when the store
// opens (until then it answers nothing), and the writer adds each event's
// id before committing it, so a reader whose transaction sees an event
// finds its id in the filter. Deletions leave their ids in it: a stale
// entry only costs a lookup in badger. 10 bits per id of capacity (the
// loaded layer is sized for twice the ids stored: 2.5 MB at a million),
// false positives ~0.02 % after a load and below 1 % per full layer; the
// first 8 bytes of an id are uniform, being a hash, and a per-process seed
// keeps which ids collide unpredictable.
//
// It also keeps, for every id it holds, the event's serial: a lookup by id
// reads the record directly instead of seeking the id index (serialHints).
type idFilter struct {
	seed uint64

	mu     sync.RWMutex
	layers []*idLayer // each twice the capacity of the one before
	ready  bool
	hints  serialHints

	stop, done chan struct{}
}

// idLayer is one Bloom filter of the id filter, sized for capacity ids.
type idLayer struct {
	bits        []uint64
	m           uint64
	n, capacity int
}

const (
	idFilterBitsPerID = 10
	idFilterProbes    = 7
	idFilterFirst     = 1 << 16
)

func newIDLayer(capacity int) *idLayer {
	words := (capacity*idFilterBitsPerID + 63) / 64
	return &idLayer{bits: make([]uint64, words), m: uint64(words) * 64, capacity: capacity}
}

func (l *idLayer) has(h1, h2 uint64) bool {
	for i := range uint64(idFilterProbes) {
		b := (h1 + i*h2) % l.m
		if l.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

func (l *idLayer) set(h1, h2 uint64) {
	for i := range uint64(idFilterProbes) {
		b := (h1 + i*h2) % l.m
		l.bits[b/64] |= 1 << (b % 64)
	}
}

// mix64 is splitmix64's finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

func (f *idFilter) hashes(id8 []byte) (h1, h2 uint64) {
	x := binary.LittleEndian.Uint64(id8) ^ f.seed
	return mix64(x), mix64(x+0x9e3779b97f4a7c15) | 1
}

// add records an id by its first 8 bytes, and its event's serial.
func (f *idFilter) add(id8 []byte, serial uint32) {
	if f == nil {
		return
	}
	h1, h2 := f.hashes(id8)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hints.add(binary.BigEndian.Uint64(id8), serial)
	l := f.layers[len(f.layers)-1]
	if l.n >= l.capacity {
		l = newIDLayer(2 * l.capacity)
		f.layers = append(f.layers, l)
	}
	l.n++
	l.set(h1, h2)
}

// absent reports whether the filter is loaded and no id with these first
// 8 bytes was ever added.
func (f *idFilter) absent(id8 []byte) bool {
	if f == nil {
		return false
	}
	h1, h2 := f.hashes(id8)
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.ready {
		return false
	}
	for _, l := range f.layers {
		if l.has(h1, h2) {
			return false
		}
	}
	return true
}

// serials appends to buf the serials recorded for ids with these first 8
// bytes, once the filter is loaded (before that, none: badger answers).
func (f *idFilter) serials(id8 []byte, buf []uint32) []uint32 {
	if f == nil {
		return buf
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.ready {
		return buf
	}
	return f.hints.get(binary.BigEndian.Uint64(id8), buf)
}

// bytes is the filter's size.
func (f *idFilter) bytes() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := 0
	for _, l := range f.layers {
		n += 8 * len(l.bits)
	}
	return n
}

// startIDFilter takes a snapshot and loads the id filter from its id
// index in the background; call before the writer runs, which adds every
// id written after the snapshot.
func (s *badgerStore) startIDFilter() {
	f := &idFilter{seed: rand.Uint64(), layers: []*idLayer{newIDLayer(idFilterFirst)}, stop: make(chan struct{}), done: make(chan struct{})}
	s.ids = f
	txn := s.db.NewTransaction(false)
	go func() {
		defer close(f.done)
		defer txn.Discard()
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{keyID}})
		defer it.Close()
		// The ids first (8 bytes each, for the time of the load), then one
		// layer sized for twice as many: half full, its false positives
		// are ~0.02 %, where growing layer by layer from the first would
		// have reached ~3 % at a million ids.
		var ids [][8]byte
		var serials []uint32
		for it.Rewind(); it.Valid(); it.Next() {
			if len(ids)%4096 == 0 {
				select {
				case <-f.stop:
					return
				default:
				}
			}
			if k := it.Item().Key(); len(k) == 1+8+4 {
				ids = append(ids, [8]byte(k[1:9]))
				serials = append(serials, binary.BigEndian.Uint32(k[9:]))
			}
		}
		l := newIDLayer(max(idFilterFirst, 2*len(ids)))
		for i := range ids {
			l.set(f.hashes(ids[i][:]))
		}
		l.n = len(ids)
		loaded := len(ids)
		base := newSerialBase(ids, serials) // in the id index's order: sorted
		ids, serials = nil, nil
		f.mu.Lock()
		f.layers = append(f.layers, l) // last: later ids go to it while it has room
		f.hints.load(base)
		f.ready = true
		f.mu.Unlock()
		s.log.Info("id filter loaded", "ids", loaded, "bytes", f.bytes(), "serial_hint_bytes", f.hintBytes())
	}()
}

// close stops loading the filter.
func (f *idFilter) close() {
	if f == nil {
		return
	}
	close(f.stop)
	<-f.done
}

// idFilterReady reports whether the id filter answers.
func (s *badgerStore) idFilterReady() bool {
	s.ids.mu.RLock()
	defer s.ids.mu.RUnlock()
	return s.ids.ready
}
