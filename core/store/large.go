package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Large events. eventstore v0.17.14's badger codec writes the content length
// in 16 bits, so an event whose content exceeds 65,535 bytes cannot be
// encoded, yet a NIP-34 patch with a real diff is often larger. Such an
// event is stored as two records written by the single writer, in this
// order:
//
//  1. its content, under largePrefix + the 32-byte id;
//  2. the event itself through the backend, with the content replaced by
//     largeStub. Indexes, queries, counting, negentropy, deletion and
//     replacement see an ordinary event: none of them reads the content.
//
// Reads put the content back (withContent). A crash between the two writes
// leaves an orphaned content record, which nothing reads; so does replacing
// a large event with a newer version (the backend deletes the old version
// inside its own transaction). sweepLarge removes orphans. A content record
// is only ever read for an event whose stored content is largeStub, and an
// event id is the hash of its real content, so an event whose content
// happens to be largeStub is served as it is.
//
// Existing data directories hold no largePrefix keys and no stubs: they
// open and read exactly as before.

// largePrefix is the first key byte of a content record. The backend uses
// 0-8, the side tables 0x80.
const largePrefix byte = 0x81

// largeStub stands for the content in the backend's copy of a large event.
const largeStub = "\x00grasp: content kept in a large-content record\x00"

// maxCodecContent is the longest content the backend's codec can hold.
const maxCodecContent = math.MaxUint16

// maxLargeContent bounds a content record: badger refuses values larger than
// a value-log file (64 MiB by default). The relay limits are far below it.
const maxLargeContent = 32 << 20

func largeKey(id string) ([]byte, error) {
	k := make([]byte, 1, 33)
	k[0] = largePrefix
	if !nip34.IsHex64(id) {
		return nil, fmt.Errorf("invalid: event id %q", id)
	}
	raw, _ := hex.DecodeString(id)
	return append(k, raw...), nil
}

// splitLarge returns the event the backend stores and, for a large event,
// its content record.
func splitLarge(evt *nostr.Event) (stored *nostr.Event, content []byte) {
	if len(evt.Content) <= maxCodecContent {
		return evt, nil
	}
	stub := *evt
	stub.Content = largeStub
	return &stub, []byte(evt.Content)
}

// putLarge writes a content record; the writer calls it before the event.
func (s *Store) putLarge(id string, content []byte) error {
	k, err := largeKey(id)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(k, content) }); err != nil {
		return fmt.Errorf("error: store large content of %s: %w", id, err)
	}
	s.hasLarge.Store(true)
	return nil
}

// dropLarge removes the content record of a deleted event, if any.
func (s *Store) dropLarge(id string) error {
	if !s.hasLarge.Load() {
		return nil
	}
	k, err := largeKey(id)
	if err != nil {
		return nil // the backend would not have stored such an id either
	}
	return s.db.Update(func(txn *badger.Txn) error { return txn.Delete(k) })
}

// withContent streams src, putting large contents back. Without any large
// event in the store the channel is returned as it is, at no cost.
func (s *Store) withContent(ctx context.Context, src chan *nostr.Event) chan *nostr.Event {
	if !s.hasLarge.Load() {
		return src
	}
	out := make(chan *nostr.Event)
	go func() {
		defer close(out)
		defer func() {
			for range src { // let the backend's goroutine finish
			}
		}()
		for evt := range src {
			if evt.Content == largeStub {
				s.fillLarge(evt)
			}
			select {
			case out <- evt:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (s *Store) fillLarge(evt *nostr.Event) {
	k, err := largeKey(evt.ID)
	if err != nil {
		return
	}
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			evt.Content = string(v)
			return nil
		})
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		// An event whose real content is largeStub: served as it is.
	case err != nil:
		s.log.Error("reading large content failed", "id", evt.ID, "error", err)
	}
}

// anyLarge reports whether the database holds a content record.
func anyLarge(db *badger.DB) (bool, error) {
	found := false
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{largePrefix}})
		defer it.Close()
		it.Rewind()
		found = it.Valid()
		return nil
	})
	return found, err
}

// sweepLarge deletes content records whose event is no longer stored. It
// runs on the writer goroutine, so no write is between its two records.
func (s *Store) sweepLarge() (removed int, err error) {
	var orphans [][]byte
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{largePrefix}, PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			stored, err := eventStored(txn, k[1:])
			if err != nil {
				return err
			}
			if !stored {
				orphans = append(orphans, k)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list large contents: %w", err)
	}
	for _, k := range orphans {
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(k) }); err != nil {
			return removed, fmt.Errorf("drop orphaned large content: %w", err)
		}
		removed++
	}
	return removed, nil
}

// The backend's key layout (eventstore v0.17.14 badger/lib.go): the id
// index is 2 + the id's first 8 bytes + a 4-byte serial, and the event is
// stored under 0 + that serial, its first 32 bytes being the id.
const (
	backendRawPrefix byte = 0
	backendIDPrefix  byte = 2
)

// eventStored reports whether the backend holds the event with this raw id.
func eventStored(txn *badger.Txn, id []byte) (bool, error) {
	prefix := append([]byte{backendIDPrefix}, id[:8]...)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		key := it.Item().Key()
		raw := append([]byte{backendRawPrefix}, key[len(key)-4:]...)
		item, err := txn.Get(raw)
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		same := false
		if err := item.Value(func(v []byte) error {
			same = len(v) >= 32 && string(v[:32]) == string(id)
			return nil
		}); err != nil {
			return false, err
		}
		if same {
			return true, nil
		}
	}
	return false, nil
}
