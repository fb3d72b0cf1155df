package store

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// eventstore/badger v0.17.14 keeps its schema version under key 255 and, on
// a database without one, runs "migration 5": it logs "[badger] migration 5:
// delete all indexes and recreate them" through the standard logger and
// rebuilds the indexes of every event. On a store created a moment ago there
// is nothing to rebuild, and an operator reading that line on first start
// thinks data is being deleted. So a fresh store is stamped with the version
// the library's last migration writes before the library opens it.
const (
	eventstoreVersionKey = 255
	eventstoreVersion    = 5
)

func (s *badgerStore) stampFresh() error {
	db, err := badger.Open(s.badgerOptions(badger.DefaultOptions(s.dbDir)))
	if err != nil {
		return fmt.Errorf("store: create badger at %s: %w", s.dbDir, err)
	}
	err = db.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte{eventstoreVersionKey}, []byte{0, eventstoreVersion})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: stamp new badger at %s: %w", s.dbDir, err)
	}
	return nil
}
