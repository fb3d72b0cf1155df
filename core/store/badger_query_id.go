package store

import (
	"encoding/binary"
	"errors"

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
type idReader struct {
	txn *badger.Txn
	it  *badger.Iterator
}

func newIDReader(txn *badger.Txn) *idReader { return &idReader{txn: txn} }

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
		serial := binary.BigEndian.Uint32(k[len(prefix):])
		item, err := r.txn.Get(rawKey(serial))
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue // an index key whose record is gone
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
		if err != nil || found {
			return found, err
		}
	}
	return false, nil
}
