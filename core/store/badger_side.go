package store

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/grasp-dev/grasp/core/outcome"
)

// The side tables in badger: one key per entry, sidePrefix + bucket + NUL +
// key, its value a version byte, the expiry in unix nanoseconds and the
// value. A write transaction is committed under sideMu and made durable by
// the writer's next group fsync (a barrier), like an event.

// sidePrefix is the first key byte of every side-table entry. The event
// backend uses 0..8 and 255, so side entries never meet its scans or its
// index-rebuilding migration.
const sidePrefix byte = 0x80

const (
	sideHeaderLen = 9 // version byte + expiry in unix nanoseconds
	sideVersion   = 1
)

// sideUpdate commits fn's transaction, then waits for the group fsync.
func (s *badgerStore) sideUpdate(ctx context.Context, fn func(tx SideTx) error) error {
	wrote, big, err := s.commit(fn)
	if err != nil || !wrote {
		return err
	}
	// The transaction is in badger's WAL; wait for the next group fsync.
	if err := s.w.submit(ctx, &op{kind: opBarrier, vlog: big}); err != nil {
		return outcome.Errorf(outcome.Error, "side-table update committed but not synced: %w", err)
	}
	return nil
}

// commit runs fn in one badger transaction under sideMu. Serialising side
// transactions means they never conflict with each other (events use other
// keys), so fn need not be retried; the fsync wait happens outside the lock,
// so concurrent Updates still share fsyncs.
// It also reports whether a value was big enough for badger's value log.
func (s *badgerStore) commit(fn func(tx SideTx) error) (wrote, big bool, err error) {
	s.sideMu.Lock()
	defer s.sideMu.Unlock()
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	tx := &sideTx{txn: txn, now: s.env.Clock.Now(), vthreshold: s.vthreshold}
	if err := fn(tx); err != nil {
		return false, false, err
	}
	if !tx.wrote {
		return false, false, nil
	}
	if err := txn.Commit(); err != nil {
		return false, false, outcome.Errorf(outcome.Error, "commit side-table update: %w", err)
	}
	return true, tx.big, nil
}

func (s *badgerStore) sideView(_ context.Context, fn func(tx SideTx) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		return fn(&sideTx{txn: txn, now: s.env.Clock.Now(), readOnly: true})
	})
}

type sideTx struct {
	txn      *badger.Txn
	now      time.Time
	readOnly bool
	wrote    bool
	big      bool // a value may have gone to the value log
	// vthreshold is the store's value-log threshold.
	vthreshold int64
}

func (tx *sideTx) Get(bucket, key string) ([]byte, bool, error) {
	k, err := sideKey(bucket, key)
	if err != nil {
		return nil, false, err
	}
	item, err := tx.txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, outcome.Errorf(outcome.Error, "read side entry %s/%s: %w", bucket, key, err)
	}
	raw, err := item.ValueCopy(nil)
	if err != nil {
		return nil, false, outcome.Errorf(outcome.Error, "read side entry %s/%s: %w", bucket, key, err)
	}
	val, expires, err := decodeSideValue(raw)
	if err != nil {
		return nil, false, outcome.Errorf(outcome.Error, "side entry %s/%s: %w", bucket, key, err)
	}
	if expired(expires, tx.now) {
		return nil, false, nil
	}
	return val, true, nil
}

func (tx *sideTx) Put(bucket, key string, val []byte, ttl time.Duration) error {
	if tx.readOnly {
		return outcome.Errorf(outcome.Error, "side-table write in a read-only transaction")
	}
	k, err := sideKey(bucket, key)
	if err != nil {
		return err
	}
	if ttl < 0 {
		return outcome.Errorf(outcome.Invalid, "negative ttl %s for side entry %s/%s", ttl, bucket, key)
	}
	if len(val) > maxSideValueLen {
		return outcome.Errorf(outcome.Invalid, "side value of %d bytes exceeds %d", len(val), maxSideValueLen)
	}
	var expires time.Time
	if ttl > 0 {
		expires = tx.now.Add(ttl)
	}
	if err := tx.txn.Set(k, encodeSideValue(val, expires)); err != nil {
		return outcome.Errorf(outcome.Error, "write side entry %s/%s: %w", bucket, key, err)
	}
	tx.wrote = true
	tx.big = tx.big || int64(len(k)+sideHeaderLen+len(val)) >= tx.vthreshold/2
	return nil
}

func (tx *sideTx) Delete(bucket, key string) error {
	if tx.readOnly {
		return outcome.Errorf(outcome.Error, "side-table delete in a read-only transaction")
	}
	k, err := sideKey(bucket, key)
	if err != nil {
		return err
	}
	if err := tx.txn.Delete(k); err != nil {
		return outcome.Errorf(outcome.Error, "delete side entry %s/%s: %w", bucket, key, err)
	}
	tx.wrote = true
	return nil
}

func (tx *sideTx) Scan(bucket string, fn func(key string, val []byte, expires time.Time) error) error {
	prefix, err := bucketPrefix(bucket)
	if err != nil {
		return err
	}
	it := tx.txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: false})
	defer it.Close()
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		item := it.Item()
		key := string(item.Key()[len(prefix):])
		err := item.Value(func(raw []byte) error {
			val, expires, err := decodeSideValue(raw)
			if err != nil {
				return outcome.Errorf(outcome.Error, "side entry %s/%s: %w", bucket, key, err)
			}
			if expired(expires, tx.now) {
				return nil
			}
			return fn(key, val, expires)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// bucketPrefix is the key prefix of bucket's entries: sidePrefix, the
// name, NUL.
func bucketPrefix(bucket string) ([]byte, error) {
	if err := checkBucket(bucket); err != nil {
		return nil, err
	}
	p := make([]byte, 0, 2+len(bucket))
	p = append(p, sidePrefix)
	p = append(p, bucket...)
	return append(p, 0), nil
}

func sideKey(bucket, key string) ([]byte, error) {
	if err := checkSideKey(bucket, key); err != nil {
		return nil, err
	}
	p, _ := bucketPrefix(bucket)
	return append(p, key...), nil
}

func encodeSideValue(val []byte, expires time.Time) []byte {
	b := make([]byte, sideHeaderLen+len(val))
	b[0] = sideVersion
	if !expires.IsZero() {
		binary.BigEndian.PutUint64(b[1:sideHeaderLen], uint64(expires.UnixNano()))
	}
	copy(b[sideHeaderLen:], val)
	return b
}

// decodeSideValue returns a slice of raw (not a copy) and the expiry.
func decodeSideValue(raw []byte) ([]byte, time.Time, error) {
	if len(raw) < sideHeaderLen || raw[0] != sideVersion {
		return nil, time.Time{}, errors.New("unrecognised side-table value encoding")
	}
	var expires time.Time
	if ns := binary.BigEndian.Uint64(raw[1:sideHeaderLen]); ns != 0 {
		expires = time.Unix(0, int64(ns))
	}
	return raw[sideHeaderLen:], expires, nil
}
