package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/zstd"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// Content records. An event's content may be kept apart from its record,
// in a content record written by the single writer in the same badger
// transaction as the event (badger_write.go):
//
//  1. the content, under a content prefix + the 32-byte id;
//  2. the event's record (badger_codec.go), with the content replaced by a
//     stub. Indexes, counting, negentropy, deletion and replacement see an
//     ordinary event: none of them reads the content.
//
// Two kinds exist:
//
//   - large (largePrefix, largeStub, the content as it is): eventstore
//     v0.17.14's badger codec writes the content length in 16 bits, so an
//     event whose content exceeds 65,535 bytes cannot be encoded, yet a
//     NIP-34 patch with a real diff is often larger.
//   - packed (packedPrefix, packedStub, a format byte and the content
//     compressed with zstd): patches, issues and comments are text, which
//     compresses ~3x, and the content is most of an event's bytes. Every
//     byte stored is written about twice before it settles (the memtable's
//     write-ahead log, then the level-0 table) and again by compactions,
//     so packing is the main lever on bytes written per event (issue 15
//     part 3; docs/benchmarks.md says what each byte is for). Content
//     shorter than packMinContent, or that does not shrink by an eighth,
//     stays inline.
//
// Queries put the content back (badger_query.go). Before both records were
// written in one transaction, a crash between them could leave an orphaned
// content record, which nothing reads; sweepLarge removes those from
// older stores. A content record is only ever
// read for an event whose stored content is a stub, and an event id is the
// hash of its real content, so an event whose content happens to be a stub
// is served as it is.
//
// Data directories written before content records existed hold no such
// keys and no stubs: they open and read exactly as before, and their
// events stay inline (nothing is rewritten); events saved afterwards are
// packed.

// largePrefix and packedPrefix are the first key byte of a content record.
// The backend uses 0-8, the side tables 0x80.
const (
	largePrefix  byte = 0x81
	packedPrefix byte = 0x82
)

// largeStub and packedStub stand for the content in the backend's copy of
// an event whose content is in a content record.
const (
	largeStub  = "\x00grasp: content kept in a large-content record\x00"
	packedStub = "\x00grasp:z\x00"
)

// packMinContent is the shortest content worth packing: below it the
// record's key and the compression frame cost more than they save.
const packMinContent = 256

// packZstd is the first byte of a packed record: its format. A later format
// gets another byte, and records of this one stay readable.
const packZstd byte = 1

// maxCodecContent is the longest content the backend's codec can hold.
const maxCodecContent = math.MaxUint16

// maxLargeContent bounds a content record: badger refuses values larger than
// a value-log file (64 MiB by default). The relay limits are far below it.
const maxLargeContent = 32 << 20

var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(fmt.Sprintf("store: zstd encoder: %v", err)) // only for invalid options
		}
		return enc
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxLargeContent))
		if err != nil {
			panic(fmt.Sprintf("store: zstd decoder: %v", err))
		}
		return dec
	})
)

// packContent returns the packed record of content, or nil when packing
// would not save an eighth of it.
func packContent(content string) []byte {
	rec := make([]byte, 1, 1+len(content)/2)
	rec[0] = packZstd
	rec = zstdEncoder().EncodeAll([]byte(content), rec)
	if len(rec) > len(content)-len(content)/8 {
		return nil
	}
	return rec
}

// unpackContent reverses packContent.
func unpackContent(rec []byte) (string, error) {
	if len(rec) == 0 || rec[0] != packZstd {
		return "", fmt.Errorf("unknown packed-content format")
	}
	out, err := zstdDecoder().DecodeAll(rec[1:], make([]byte, 0, 4*len(rec)))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func contentKey(prefix byte, id string) ([]byte, error) {
	k := make([]byte, 1, 33)
	k[0] = prefix
	if !nip34.IsHex64(id) {
		return nil, outcome.Errorf(outcome.Invalid, "event id %q", id)
	}
	raw, _ := hex.DecodeString(id)
	return append(k, raw...), nil
}

// splitContent returns the event the backend stores and, when its content
// goes to a content record, that record and its key prefix. pack is off
// only in tests that write a store as an earlier grasp did.
func splitContent(evt *nostr.Event, pack bool) (stored *nostr.Event, rec []byte, prefix byte) {
	if pack && len(evt.Content) >= packMinContent {
		if rec := packContent(evt.Content); rec != nil {
			stub := *evt
			stub.Content = packedStub
			return &stub, rec, packedPrefix
		}
	}
	if len(evt.Content) <= maxCodecContent {
		return evt, nil, 0
	}
	stub := *evt
	stub.Content = largeStub
	return &stub, []byte(evt.Content), largePrefix
}

// putContent writes a content record; the writer calls it before the event.
func (s *badgerStore) putContent(prefix byte, id string, rec []byte) error {
	k, err := contentKey(prefix, id)
	if err != nil {
		return err
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(k, rec) }); err != nil {
		return outcome.Errorf(outcome.Error, "store the content of %s: %w", id, err)
	}
	s.hasLarge.Store(true)
	return nil
}

// putLarge writes a large-content record (the content as it is).
func (s *badgerStore) putLarge(id string, content []byte) error {
	return s.putContent(largePrefix, id, content)
}

// isStub reports whether content stands for a content record.
func isStub(content string) bool { return content == packedStub || content == largeStub }

// anyLarge reports whether the database holds a content record.
func anyLarge(db *badger.DB) (bool, error) {
	found := false
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		it.Seek([]byte{largePrefix})
		found = it.Valid() && isContentKey(it.Item().Key())
		return nil
	})
	return found, err
}

func isContentKey(k []byte) bool {
	return len(k) == 33 && (k[0] == largePrefix || k[0] == packedPrefix)
}

// sweepBatch bounds the content records one sweep looks at. The sweep runs
// on the writer, so it holds every write back while it runs; with most
// events packed, a store holds a content record per event, and the sweep
// goes through them a slice at a time, one Maintain after another.
const sweepBatch = 20_000

// sweepLarge deletes content records whose event is no longer stored,
// continuing where the previous sweep stopped (s.sweepFrom, nil at the
// start). It runs on the writer goroutine, so no write is between an
// event's two records.
func (s *badgerStore) sweepLarge() (removed int, err error) {
	var orphans [][]byte
	from := s.sweepFrom
	if from == nil {
		from = []byte{largePrefix}
	}
	var next []byte
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		seen := 0
		for it.Seek(from); it.Valid(); it.Next() {
			k := it.Item().Key()
			if k[0] > packedPrefix {
				break
			}
			if !isContentKey(k) {
				continue
			}
			if seen == sweepBatch {
				next = it.Item().KeyCopy(nil)
				break
			}
			seen++
			stored, err := eventStored(txn, k[1:])
			if err != nil {
				return err
			}
			if !stored {
				orphans = append(orphans, it.Item().KeyCopy(nil))
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list content records: %w", err)
	}
	s.sweepFrom = next
	for _, k := range orphans {
		if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(k) }); err != nil {
			return removed, fmt.Errorf("drop orphaned content record: %w", err)
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
