package store

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/skl"
	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
)

// Writes of the badger backend. The writer goroutine (badger_writer.go) applies a
// group commit's saves in one badger transaction, committed once before the
// batch's sync, instead of a transaction per save (and one more per content
// record) as the library's SaveEvent did; a replacement or deletion, rare,
// gets a transaction of its own, after the saves queued before it are
// committed, so that it sees them. Everything an event's writes need that
// does not depend on what is stored (its record, index keys, raw id) is
// built by prepare on the caller's goroutine, leaving the single writer
// the lookups and the badger calls.

// prepared is one event's writes: its record and index keys, each key
// ending in a serial to fill in when the writer assigns it.
type prepared struct {
	id     [32]byte
	record []byte
	keys   [][]byte
}

// prepare builds evt's writes; evt is the event as stored (content maybe a
// stub, see splitContent) and has passed validateEvent.
func prepare(evt *nostr.Event) *prepared {
	p := &prepared{record: encodeRecord(nil, evt)}
	hex.Decode(p.id[:], []byte(evt.ID))
	n, size := 0, 0
	indexKeys(evt, 0, func(k []byte) { n, size = n+1, size+len(k) })
	slab := make([]byte, 0, size)
	p.keys = make([][]byte, 0, n)
	indexKeys(evt, 0, func(k []byte) {
		slab = append(slab, k...)
		p.keys = append(p.keys, slab[len(slab)-len(k):len(slab):len(slab)])
	})
	return p
}

// setSerial writes serial into the last four bytes of every key.
func (p *prepared) setSerial(serial uint32) {
	for _, k := range p.keys {
		binary.BigEndian.PutUint32(k[len(k)-4:], serial)
	}
}

// indexOp is one change for the negentropy index, applied once the
// transaction holding it committed.
type indexOp struct {
	add bool
	evt *nostr.Event
}

// batchTxn applies one group commit's writes. Saves accumulate in txn
// (a run); read is a snapshot taken when the run began, for duplicate
// checks, and ids holds the ids saved in the run since.
type batchTxn struct {
	s    *badgerStore
	txn  *badger.Txn
	read *badger.Txn
	// reader finds stored ids in read: one iterator for the run's
	// duplicate checks instead of one per save.
	reader *idReader
	ids    map[[32]byte]bool
	run    []int // the batch positions of the ops in txn
	index  []indexOp
	count  int64
	size   int64
	large  bool
	// vlog is set once a value went to the value log: the batch's sync
	// must include it.
	vlog bool
	// maxCount and maxSize are badger's limits of one transaction, less a
	// margin.
	maxCount, maxSize int64
}

func (s *badgerStore) newBatchTxn() *batchTxn {
	maxSize := int64(s.opts.MemTableMB) << 20 * 15 / 100
	return &batchTxn{s: s, ids: map[[32]byte]bool{}, maxSize: maxSize * 9 / 10, maxCount: maxSize / int64(skl.MaxNodeSize) * 9 / 10}
}

// applyBatch applies every op of batch, setting errs[i] for op i, and
// reports whether a value went to the value log.
func (s *badgerStore) applyBatch(batch []*op, errs []error) (vlog bool) {
	b := s.newBatchTxn()
	for i, o := range batch {
		switch o.kind {
		case opSave:
			errs[i] = b.save(i, o, errs)
		case opReplace, opDelete:
			b.flush(errs)
			errs[i] = b.alone(o)
		case opSweep:
			b.flush(errs)
			o.swept, errs[i] = s.sweepLarge()
		case opBarrier:
			b.vlog = b.vlog || o.vlog
		}
	}
	b.flush(errs)
	return b.vlog
}

// estimate is badger's own measure of an entry against a transaction's
// limits (Txn.checkSize).
func (b *batchTxn) estimate(key, value []byte) int64 {
	n := int64(len(key)) + 2 + 10
	if int64(len(value)) < b.s.vthreshold {
		return n + int64(len(value))
	}
	b.vlog = true
	return n + 12
}

// save adds a save to the run, after the duplicate checks.
func (b *batchTxn) save(i int, o *op, errs []error) (err error) {
	defer recoverWrite(b.s, o, &err)
	p := o.prep
	if b.ids[p.id] {
		return eventstore.ErrDupEvent
	}
	dup, err := b.stored(p.id)
	if err != nil {
		return outcome.Errorf(outcome.Error, "look for a duplicate of %s: %w", o.evt.ID, err)
	}
	if dup {
		return eventstore.ErrDupEvent
	}
	var ckey []byte
	count, size := int64(len(p.keys)+1), int64(0)
	if o.content != nil {
		ckey = append([]byte{o.contentPrefix}, p.id[:]...)
		count++
		size += b.estimate(ckey, o.content)
	}
	size += b.estimate([]byte{0, 0, 0, 0, 0}, p.record)
	for _, k := range p.keys {
		size += b.estimate(k, nil)
	}
	if b.txn != nil && (b.count+count >= b.maxCount || b.size+size >= b.maxSize) {
		b.flush(errs)
	}
	if b.txn == nil {
		b.txn = b.s.db.NewTransaction(true)
	}
	serial, err := b.s.nextSerial()
	if err != nil {
		return err
	}
	p.setSerial(serial)
	if err := b.set(o, ckey, serial); err != nil {
		// Part of this event is in the transaction: none of the run
		// may be committed.
		b.discard(errs, err)
		return err
	}
	b.count, b.size = b.count+count, b.size+size
	b.ids[p.id] = true
	b.run = append(b.run, i)
	b.index = append(b.index, indexOp{add: true, evt: o.evt})
	return nil
}

// stored reports whether an event with this raw id was stored when the run
// began.
func (b *batchTxn) stored(id [32]byte) (bool, error) {
	if b.read == nil {
		b.read = b.s.db.NewTransaction(false)
		b.reader = b.s.newIDReader(b.read)
	}
	return b.reader.find(&id, func(uint32, []byte) error { return nil })
}

// flush commits the run. If the commit fails, every op of the run fails.
func (b *batchTxn) flush(errs []error) {
	if b.read != nil {
		b.reader.close()
		b.read.Discard()
		b.read, b.reader = nil, nil
	}
	if b.txn == nil {
		return
	}
	err := b.txn.Commit()
	b.txn = nil
	if err != nil {
		for _, i := range b.run {
			if errs[i] == nil {
				errs[i] = outcome.Errorf(outcome.Error, "commit the store's write batch: %w", err)
			}
		}
	} else {
		b.applied()
	}
	clear(b.ids)
	b.run, b.index, b.count, b.size = b.run[:0], b.index[:0], 0, 0
}

// applied tells the rest of the store about a committed transaction.
func (b *batchTxn) applied() {
	if b.large {
		b.s.hasLarge.Store(true)
		b.large = false
	}
	for _, x := range b.index {
		b.s.indexed(x.add, x.evt)
	}
}

// alone applies a replacement or a deletion in a transaction of its own.
func (b *batchTxn) alone(o *op) (err error) {
	defer recoverWrite(b.s, o, &err)
	txn := b.s.db.NewTransaction(true)
	defer txn.Discard()
	b.txn = txn
	defer func() { b.txn = nil }()
	switch o.kind {
	case opReplace:
		err = b.replace(o)
	default:
		err = b.delete(o.evt.ID)
	}
	if err != nil {
		b.index, b.count, b.size, b.large = b.index[:0], 0, 0, false
		return err
	}
	if err := txn.Commit(); err != nil {
		b.index, b.count, b.size, b.large = b.index[:0], 0, 0, false
		return outcome.Errorf(outcome.Error, "commit the %s: %w", o.kind, err)
	}
	b.applied()
	b.index, b.count, b.size = b.index[:0], 0, 0
	return nil
}

// replace stores a replaceable or addressable event unless a version at
// least as new is stored, and removes the older versions (NIP-01: the
// newest created_at wins, the lowest id between equals).
func (b *batchTxn) replace(o *op) error {
	f := nostr.Filter{Kinds: []int{o.evt.Kind}, Authors: []string{o.evt.PubKey}}
	if nostr.IsAddressableKind(o.evt.Kind) {
		f.Tags = nostr.TagMap{"d": []string{o.evt.Tags.GetD()}}
	}
	p, _ := plan(f)
	p.noContent = true
	type version struct {
		evt    *nostr.Event
		serial uint32
	}
	var versions []version
	c := cursor{}
	for {
		var more bool
		var err error
		c, more, err = b.s.page(b.txn, &p, c, func(evt *nostr.Event, serial uint32, _ int) bool {
			versions = append(versions, version{evt, serial})
			return true
		})
		if err != nil {
			return outcome.Errorf(outcome.Error, "look up the versions of %s: %w", o.evt.ID, err)
		}
		if !more {
			break
		}
	}
	store := true
	for _, v := range versions {
		if v.evt.CreatedAt < o.evt.CreatedAt || (v.evt.CreatedAt == o.evt.CreatedAt && v.evt.ID > o.evt.ID) {
			if err := b.remove(v.serial, v.evt); err != nil {
				return err
			}
		} else {
			store = false
		}
	}
	if !store {
		return nil
	}
	return b.put(o)
}

// put writes one event in b.txn (no duplicate check).
func (b *batchTxn) put(o *op) error {
	serial, err := b.s.nextSerial()
	if err != nil {
		return err
	}
	var ckey []byte
	if o.content != nil {
		ckey = append([]byte{o.contentPrefix}, o.prep.id[:]...)
		b.estimate(ckey, o.content)
	}
	b.estimate(nil, o.prep.record)
	if err := b.set(o, ckey, serial); err != nil {
		return err
	}
	b.index = append(b.index, indexOp{add: true, evt: o.evt})
	return nil
}

// set writes an event's content record (under ckey, if any), record and
// index keys under serial into b.txn.
func (b *batchTxn) set(o *op, ckey []byte, serial uint32) error {
	p := o.prep
	p.setSerial(serial)
	b.s.ids.add(p.id[:8], serial) // before the commit: see idFilter
	if ckey != nil {
		if err := b.txn.Set(ckey, o.content); err != nil {
			return outcome.Errorf(outcome.Error, "store the content of %s: %w", o.evt.ID, err)
		}
		b.large = true
	}
	if err := b.txn.Set(rawKey(serial), p.record); err != nil {
		return outcome.Errorf(outcome.Error, "store %s: %w", o.evt.ID, err)
	}
	for _, k := range p.keys {
		if err := b.txn.Set(k, nil); err != nil {
			return outcome.Errorf(outcome.Error, "index %s: %w", o.evt.ID, err)
		}
	}
	return nil
}

// discard drops the run uncommitted: its ops fail with err.
func (b *batchTxn) discard(errs []error, err error) {
	b.txn.Discard()
	b.txn = nil
	for _, i := range b.run {
		if errs[i] == nil {
			errs[i] = outcome.Errorf(outcome.Error, "the store's write batch was abandoned: %w", err)
		}
	}
	clear(b.ids)
	b.run, b.index, b.count, b.size, b.large = b.run[:0], b.index[:0], 0, 0, false
}

// delete removes the stored event with this id, if any.
func (b *batchTxn) delete(id string) error {
	raw, ok := hex32(id)
	if !ok {
		return nil // no such event can be stored
	}
	serial, evt, err := b.s.storedEvent(b.txn, raw)
	if err != nil {
		return outcome.Errorf(outcome.Error, "look up %s to delete it: %w", id, err)
	}
	if evt == nil {
		return nil
	}
	return b.remove(serial, evt)
}

// remove deletes a stored event: its record, index keys and content record.
func (b *batchTxn) remove(serial uint32, evt *nostr.Event) error {
	del := func(k []byte) error {
		if err := b.txn.Delete(k); err != nil {
			return outcome.Errorf(outcome.Error, "delete %s: %w", evt.ID, err)
		}
		return nil
	}
	var keys [][]byte
	indexKeys(evt, serial, func(k []byte) { keys = append(keys, append([]byte(nil), k...)) })
	for _, k := range keys {
		if err := del(k); err != nil {
			return err
		}
	}
	if err := del(rawKey(serial)); err != nil {
		return err
	}
	if isStub(evt.Content) || b.s.hasLarge.Load() {
		for _, prefix := range []byte{largePrefix, packedPrefix} {
			k, err := contentKey(prefix, evt.ID)
			if err == nil {
				if err := del(k); err != nil {
					return err
				}
			}
		}
	}
	b.index = append(b.index, indexOp{add: false, evt: evt})
	return nil
}

// storedEvent finds the stored event with this raw id (its content as
// stored), or nil.
func (s *badgerStore) storedEvent(txn *badger.Txn, id [32]byte) (serial uint32, evt *nostr.Event, err error) {
	r := s.newIDReader(txn)
	defer r.close()
	_, err = r.find(&id, func(sr uint32, rec []byte) error {
		e := &nostr.Event{}
		if err := decodeRecord(rec, e); err != nil {
			return err
		}
		serial, evt = sr, e
		return nil
	})
	return serial, evt, err
}

func rawKey(serial uint32) []byte {
	k := make([]byte, 5)
	k[0] = keyRaw
	binary.BigEndian.PutUint32(k[1:], serial)
	return k
}

// nextSerial takes the next record serial from the library's counter, which
// it sets from the newest record when the store opens.
func (s *badgerStore) nextSerial() (uint32, error) {
	k := s.backend.Serial()
	serial := binary.BigEndian.Uint32(k[1:])
	if serial == 0 {
		return 0, outcome.Errorf(outcome.Error, "the store's record serials are exhausted")
	}
	return serial, nil
}

// recoverWrite turns a panic while applying o into its error: a panic must
// not kill the only writer, or every later save would hang.
func recoverWrite(s *badgerStore, o *op, err *error) {
	if r := recover(); r != nil {
		s.log.Error("event store panicked", "op", o.kind.String(), "panic", r)
		*err = outcome.Errorf(outcome.Error, "event store failed on %s: %v", o.kind, r)
	}
}
