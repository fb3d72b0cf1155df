package store

import (
	"context"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/outcome"
)

// Bounds on side-table input; badger's own key limit is 65,000 bytes.
const (
	maxBucketLen    = 255
	maxSideKeyLen   = 4096
	maxSideValueLen = 8 << 20
)

// Side holds durable non-event state in named buckets: in the store's badger
// database (badger_side.go), or with the postgres backend in PostgreSQL
// (pg_side.go), shared by every instance on it. Every mutation is
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
	if sd.s.readOnly != "" {
		return sd.s.errReadOnly()
	}
	return sd.s.be.sideUpdate(ctx, fn)
}

func (sd *Side) view(ctx context.Context, fn func(tx SideTx) error) error {
	if sd.s.closed.Load() {
		return errClosed
	}
	return sd.s.be.sideView(ctx, fn)
}

func expired(expires, now time.Time) bool {
	return !expires.IsZero() && !now.Before(expires)
}

// checkBucket refuses a bucket name no backend keeps: empty, longer than
// maxBucketLen, or holding the NUL that ends a name in badger's keys.
func checkBucket(bucket string) error {
	if bucket == "" || len(bucket) > maxBucketLen {
		return outcome.Errorf(outcome.Invalid, "side bucket name must be 1..%d bytes", maxBucketLen)
	}
	// NUL separates bucket from key, so bucket "a" never scans bucket "ab".
	if strings.IndexByte(bucket, 0) >= 0 {
		return outcome.Errorf(outcome.Invalid, "side bucket name %q contains NUL", bucket)
	}
	return nil
}

// checkSideKey refuses a bucket or key no backend keeps.
func checkSideKey(bucket, key string) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	if len(key) > maxSideKeyLen {
		return outcome.Errorf(outcome.Invalid, "side key of %d bytes exceeds %d", len(key), maxSideKeyLen)
	}
	return nil
}
