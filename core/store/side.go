package store

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/grasp-dev/grasp/core/outcome"
)

// sidePrefix is the first key byte of every side-table entry. The event
// backend uses 0..8 and 255, so side entries never meet its scans or its
// index-rebuilding migration.
const sidePrefix byte = 0x80

// Bounds on side-table input; badger's own key limit is 65,000 bytes.
const (
	maxBucketLen    = 255
	maxSideKeyLen   = 4096
	maxSideValueLen = 8 << 20
	sideHeaderLen   = 9 // version byte + expiry in unix nanoseconds
	sideVersion     = 1
)

// Side holds durable non-event state in named buckets: in the store's badger
// database, or with the postgres backend in PostgreSQL (pgside.go), shared
// by every instance on it. Every mutation is
// acknowledged only after the same group-commit fsync as events. Entries
// past their expiry (judged by the store's Clock) are invisible and are
// removed by Maintain.
type Side struct{ s *Store }

// SideTx is one atomic unit of side-table work, used inside Update.
type SideTx interface {
	Get(bucket, key string) ([]byte, bool, error)
	Put(bucket, key string, val []byte, ttl time.Duration) error
	Delete(bucket, key string) error
	// Scan visits the live entries of bucket in key order.
	Scan(bucket string, fn func(key string, val []byte, expires time.Time) error) error
}

// Put stores val under bucket/key; ttl 0 keeps it until deleted.
func (sd *Side) Put(ctx context.Context, bucket, key string, val []byte, ttl time.Duration) error {
	return sd.Update(ctx, func(tx SideTx) error { return tx.Put(bucket, key, val, ttl) })
}

// Get returns the live value of bucket/key.
func (sd *Side) Get(ctx context.Context, bucket, key string) ([]byte, bool, error) {
	var (
		val []byte
		ok  bool
	)
	err := sd.view(ctx, func(tx SideTx) error {
		var err error
		val, ok, err = tx.Get(bucket, key)
		return err
	})
	return val, ok, err
}

// Delete removes bucket/key; deleting a missing key is not an error.
func (sd *Side) Delete(ctx context.Context, bucket, key string) error {
	return sd.Update(ctx, func(tx SideTx) error { return tx.Delete(bucket, key) })
}

// Scan visits the live entries of bucket in key order; an error from fn
// stops the scan and is returned. fn may call other Side methods. The value
// slice is only valid during the call.
func (sd *Side) Scan(ctx context.Context, bucket string, fn func(key string, val []byte, expires time.Time) error) error {
	return sd.view(ctx, func(tx SideTx) error { return tx.Scan(bucket, fn) })
}

// Update runs fn atomically: all of its writes commit together or none do,
// and no other Update interleaves with it, so read-modify-write is safe. fn
// runs exactly once and must use tx, not the Side (that would deadlock).
// Update returns after the writes are fsynced; ctx bounds the PostgreSQL
// queries and the wait for the fsync (a write given up on may still
// become durable).
//
// With PostgreSQL the tables are shared by every instance on the database,
// and Update serialises with the Updates of all of them.
func (sd *Side) Update(ctx context.Context, fn func(tx SideTx) error) error {
	if sd.s.closed.Load() {
		return errClosed
	}
	if sd.s.pg != nil {
		return sd.pgUpdate(ctx, fn)
	}
	if sd.s.readOnly != "" {
		return sd.s.errReadOnly()
	}
	wrote, big, err := sd.commit(fn)
	if err != nil || !wrote {
		return err
	}
	// The transaction is in badger's WAL; wait for the next group fsync.
	if err := sd.s.w.submit(ctx, &op{kind: opBarrier, vlog: big}); err != nil {
		return outcome.Errorf(outcome.Error, "side-table update committed but not synced: %w", err)
	}
	return nil
}

// commit runs fn in one badger transaction under sideMu. Serialising side
// transactions means they never conflict with each other (events use other
// keys), so fn need not be retried; the fsync wait happens outside the lock,
// so concurrent Updates still share fsyncs.
// It also reports whether a value was big enough for badger's value log.
func (sd *Side) commit(fn func(tx SideTx) error) (wrote, big bool, err error) {
	sd.s.sideMu.Lock()
	defer sd.s.sideMu.Unlock()
	txn := sd.s.db.NewTransaction(true)
	defer txn.Discard()
	tx := &sideTx{txn: txn, now: sd.s.env.Clock.Now(), vthreshold: sd.s.vthreshold}
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

func (sd *Side) view(ctx context.Context, fn func(tx SideTx) error) error {
	if sd.s.closed.Load() {
		return errClosed
	}
	if sd.s.pg != nil {
		return fn(&pgSideTx{ctx: ctx, q: sd.s.pgDB(), now: sd.s.env.Clock.Now(), readOnly: true})
	}
	return sd.s.db.View(func(txn *badger.Txn) error {
		return fn(&sideTx{txn: txn, now: sd.s.env.Clock.Now(), readOnly: true})
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

func expired(expires, now time.Time) bool {
	return !expires.IsZero() && !now.Before(expires)
}

func bucketPrefix(bucket string) ([]byte, error) {
	if bucket == "" || len(bucket) > maxBucketLen {
		return nil, outcome.Errorf(outcome.Invalid, "side bucket name must be 1..%d bytes", maxBucketLen)
	}
	// NUL separates bucket from key, so bucket "a" never scans bucket "ab".
	if strings.IndexByte(bucket, 0) >= 0 {
		return nil, outcome.Errorf(outcome.Invalid, "side bucket name %q contains NUL", bucket)
	}
	p := make([]byte, 0, 2+len(bucket))
	p = append(p, sidePrefix)
	p = append(p, bucket...)
	return append(p, 0), nil
}

func sideKey(bucket, key string) ([]byte, error) {
	p, err := bucketPrefix(bucket)
	if err != nil {
		return nil, err
	}
	if len(key) > maxSideKeyLen {
		return nil, outcome.Errorf(outcome.Invalid, "side key of %d bytes exceeds %d", len(key), maxSideKeyLen)
	}
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
