package store

import (
	"context"
	"errors"

	"github.com/dgraph-io/badger/v4"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// privacyEventPrefix is the first key byte of an event's record in badger
// (side entries use 0x80, content records 0x81 and 0x82).
const privacyEventPrefix byte = 0x83

func privacyEventKey(id string) ([]byte, error) {
	if !nip34.IsHex64(id) {
		return nil, outcome.Errorf(outcome.Invalid, "event id %q", id)
	}
	return append([]byte{privacyEventPrefix}, id...), nil
}

// putPrivacy writes the record in its own transaction, in the write-ahead
// log the event's group commit syncs next; a record big enough for the
// value log, which an event batch without large values does not sync,
// waits for a sync of its own.
func (s *badgerStore) putPrivacy(ctx context.Context, id string, val []byte) error {
	k, err := privacyEventKey(id)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(k, val) }); err != nil {
		return outcome.Errorf(outcome.Error, "record the privacy of %s: %w", id, err)
	}
	if int64(len(k)+len(val)) >= s.vthreshold/2 {
		// may be in the value log, which an event batch without large
		// values does not sync
		if err := s.w.submit(ctx, &op{kind: opBarrier, vlog: true}); err != nil {
			return outcome.Errorf(outcome.Error, "privacy record of %s committed but not synced: %w", id, err)
		}
	}
	return nil
}

// privacyEvents reads the records of ids in one snapshot.
func (s *badgerStore) privacyEvents(_ context.Context, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.db.View(func(txn *badger.Txn) error {
		for _, id := range ids {
			k, err := privacyEventKey(id)
			if err != nil {
				continue // no event has such an id
			}
			item, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if out[id], err = item.ValueCopy(nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, outcome.Errorf(outcome.Error, "read privacy records: %w", err)
	}
	return out, nil
}
