package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"hash/fnv"
	"sync"

	"github.com/grasp-dev/grasp/core/outcome"
)

// pgLockClassRepo is the first key of the two-key advisory locks that guard
// git repositories; the second is a hash of the repository's path. The
// two-key locks live apart from the one-key locks of pg_schema.go, and a
// hash collision only makes two repositories take turns.
const pgLockClassRepo int32 = 0x67727370 // "grsp"

// repoLocker is the repository lock on this database's advisory locks.
func (s *pgStore) repoLocker() *PGRepoLocker { return &PGRepoLocker{s: s} }

// PGRepoLocker implements git.Locker on PostgreSQL advisory locks.
type PGRepoLocker struct{ s *pgStore }

// Lock blocks until the lock of key is held or ctx ends (a wait is
// cancelled on the server).
func (l *PGRepoLocker) Lock(ctx context.Context, key string) (func(), error) {
	if l.s.closed.Load() {
		return nil, errClosed
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	k2 := int32(h.Sum32())
	sess := &l.s.session
	if unlock, got, err := sess.tryLock(l.s, k2); err != nil {
		l.s.log.Warn("the repository lock session failed; waiting on a connection of its own", "lock", key, "error", err)
	} else if got {
		return unlock, nil
	}
	return l.wait(ctx, key, k2)
}

// wait takes the lock on a connection of the lock pool, blocking in the
// server while another instance holds it.
func (l *PGRepoLocker) wait(ctx context.Context, key string, k2 int32) (func(), error) {
	conn, err := l.s.pools.locks.Conn(ctx)
	if err != nil {
		return nil, outcome.Errorf(outcome.Error, "repository lock %s: %w", key, err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1, $2)`, pgLockClassRepo, k2); err != nil {
		// The lock may have been granted just as the wait was cancelled:
		// end the session rather than pool a connection that may hold it.
		discard(conn)
		if cerr := ctx.Err(); cerr != nil {
			err = errors.Join(cerr, err)
		}
		return nil, outcome.Errorf(outcome.Error, "repository lock %s: %w", key, err)
	}
	return func() {
		// Unlock on the same session; should that fail, the connection
		// is discarded instead of going back to the pool, which ends the
		// session and with it the lock.
		if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, pgLockClassRepo, k2); err != nil {
			l.s.log.Error("releasing a repository lock", "lock", key, "error", err)
			discard(conn)
			return
		}
		conn.Close()
	}, nil
}

// discard closes conn and ends its session instead of pooling it.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// pgLockSession is the one session holding this instance's uncontended
// repository locks. A try-lock never waits, so one session serves every
// repository at once. Should the session end, its locks end with it:
// their holders' unlocks are then no-ops (gen), as for a lost connection
// before.
type pgLockSession struct {
	mu   sync.Mutex
	conn *sql.Conn
	gen  int
}

// tryLock takes the lock k2 on the session if no one else holds it. The
// round trip is not cancelled: a try-lock cancelled after the server
// granted it would leave it held.
func (ls *pgLockSession) tryLock(s *pgStore, k2 int32) (unlock func(), got bool, err error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.conn == nil {
		if ls.conn, err = s.pools.session.Conn(context.Background()); err != nil {
			ls.conn = nil
			return nil, false, err
		}
		ls.gen++
	}
	if err := ls.conn.QueryRowContext(context.Background(), `SELECT pg_try_advisory_lock($1, $2)`, pgLockClassRepo, k2).Scan(&got); err != nil {
		ls.drop(s, err)
		return nil, false, err
	}
	if !got {
		return nil, false, nil
	}
	gen := ls.gen
	var once sync.Once
	return func() { once.Do(func() { ls.unlock(s, gen, k2) }) }, true, nil
}

func (ls *pgLockSession) unlock(s *pgStore, gen int, k2 int32) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.conn == nil || ls.gen != gen {
		return // the session that held it has ended, and the lock with it
	}
	if _, err := ls.conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1, $2)`, pgLockClassRepo, k2); err != nil {
		ls.drop(s, err)
	}
}

// drop ends a failed session: every lock on it is released by the server.
func (ls *pgLockSession) drop(s *pgStore, err error) {
	s.log.Error("the repository lock session failed: the locks it held are released", "error", err)
	discard(ls.conn)
	ls.conn = nil
}

// closeSession ends the lock session (Close).
func (ls *pgLockSession) closeSession() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.conn != nil {
		ls.conn.Close()
		ls.conn = nil
	}
}
