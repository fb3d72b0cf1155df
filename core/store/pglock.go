package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
)

// pgLockClassRepo is the first key of the two-key advisory locks that guard
// git repositories; the second is a hash of the repository's path. The
// two-key locks live apart from the one-key locks of pgschema.go, and a
// hash collision only makes two repositories take turns.
const pgLockClassRepo int32 = 0x67727370 // "grsp"

// RepoLocker is the per-repository write lock shared by every grasp
// instance on the database (git.Locker): a PostgreSQL session advisory lock
// held on one connection for as long as the write runs. If the instance
// dies, its session ends and the lock is released by the server. nil with
// badger, whose store is single-process.
func (s *Store) RepoLocker() *PGRepoLocker {
	if s.pg == nil {
		return nil
	}
	return &PGRepoLocker{s: s}
}

// PGRepoLocker implements git.Locker on PostgreSQL advisory locks.
type PGRepoLocker struct{ s *Store }

// Lock blocks until the lock of key is held or ctx ends (the wait is
// cancelled on the server).
func (l *PGRepoLocker) Lock(ctx context.Context, key string) (func(), error) {
	if l.s.closed.Load() {
		return nil, errClosed
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	k2 := int32(h.Sum32())
	conn, err := l.s.pgDB().Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("error: repository lock %s: %w", key, err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, pgLockClassRepo, k2); err != nil {
		conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			err = errors.Join(cerr, err)
		}
		return nil, fmt.Errorf("error: repository lock %s: %w", key, err)
	}
	return func() {
		// Unlock on the same session; should that fail, the connection
		// is discarded instead of going back to the pool, which ends the
		// session and with it the lock.
		if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, pgLockClassRepo, k2); err != nil {
			l.s.log.Error("releasing a repository lock", "repo", key, "error", err)
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}
