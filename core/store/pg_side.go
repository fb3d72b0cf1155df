package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/grasp-dev/grasp/core/outcome"
)

// pgScanPage is how many side entries one scan query fetches: Scan calls fn
// between pages with no connection held, so fn may use the Side.
const pgScanPage = 500

// pgQuerier is what the side-table code needs of a pool or a transaction.
type pgQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// pgSideTx is the side table in PostgreSQL (table grasp_side), either on
// the pool (reads outside Update) or inside one transaction. Expiry is
// judged by the store's clock, as with badger, so both backends behave alike
// under a fake clock.
type pgSideTx struct {
	ctx      context.Context // the caller's: every query runs on it
	q        pgQuerier
	now      time.Time
	readOnly bool
	wrote    bool
}

var _ SideTx = (*pgSideTx)(nil)

func (tx *pgSideTx) Get(bucket, key string) ([]byte, bool, error) {
	if err := checkSideKey(bucket, key); err != nil {
		return nil, false, err
	}
	var (
		val []byte
		ns  int64
	)
	err := tx.q.QueryRowContext(tx.ctx,
		`SELECT val, expires_ns FROM grasp_side WHERE bucket = $1 AND key = $2`, bucket, []byte(key)).Scan(&val, &ns)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, outcome.Errorf(outcome.Error, "read side entry %s/%s: %w", bucket, key, err)
	}
	if expired(nsTime(ns), tx.now) {
		return nil, false, nil
	}
	return val, true, nil
}

func (tx *pgSideTx) Put(bucket, key string, val []byte, ttl time.Duration) error {
	if tx.readOnly {
		return outcome.Errorf(outcome.Error, "side-table write in a read-only transaction")
	}
	if err := checkSideKey(bucket, key); err != nil {
		return err
	}
	if ttl < 0 {
		return outcome.Errorf(outcome.Invalid, "negative ttl %s for side entry %s/%s", ttl, bucket, key)
	}
	if len(val) > maxSideValueLen {
		return outcome.Errorf(outcome.Invalid, "side value of %d bytes exceeds %d", len(val), maxSideValueLen)
	}
	var ns int64
	if ttl > 0 {
		ns = tx.now.Add(ttl).UnixNano()
	}
	if val == nil {
		val = []byte{}
	}
	_, err := tx.q.ExecContext(tx.ctx, `INSERT INTO grasp_side (bucket, key, val, expires_ns)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (bucket, key) DO UPDATE SET val = EXCLUDED.val, expires_ns = EXCLUDED.expires_ns`,
		bucket, []byte(key), val, ns)
	if err != nil {
		return outcome.Errorf(outcome.Error, "write side entry %s/%s: %w", bucket, key, err)
	}
	tx.wrote = true
	return nil
}

func (tx *pgSideTx) Delete(bucket, key string) error {
	if tx.readOnly {
		return outcome.Errorf(outcome.Error, "side-table delete in a read-only transaction")
	}
	if err := checkSideKey(bucket, key); err != nil {
		return err
	}
	if _, err := tx.q.ExecContext(tx.ctx,
		`DELETE FROM grasp_side WHERE bucket = $1 AND key = $2`, bucket, []byte(key)); err != nil {
		return outcome.Errorf(outcome.Error, "delete side entry %s/%s: %w", bucket, key, err)
	}
	tx.wrote = true
	return nil
}

func (tx *pgSideTx) Scan(bucket string, fn func(key string, val []byte, expires time.Time) error) error {
	if err := checkBucket(bucket); err != nil {
		return err
	}
	after := []byte{}
	for {
		type row struct {
			key, val []byte
			ns       int64
		}
		rows, err := tx.q.QueryContext(tx.ctx, `SELECT key, val, expires_ns FROM grasp_side
			WHERE bucket = $1 AND key > $2 ORDER BY key LIMIT $3`, bucket, after, pgScanPage)
		if err != nil {
			return outcome.Errorf(outcome.Error, "scan side bucket %s: %w", bucket, err)
		}
		var page []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.key, &r.val, &r.ns); err != nil {
				rows.Close()
				return outcome.Errorf(outcome.Error, "scan side bucket %s: %w", bucket, err)
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return outcome.Errorf(outcome.Error, "scan side bucket %s: %w", bucket, err)
		}
		for _, r := range page {
			exp := nsTime(r.ns)
			if expired(exp, tx.now) {
				continue
			}
			if err := fn(string(r.key), r.val, exp); err != nil {
				return err
			}
		}
		if len(page) < pgScanPage {
			return nil
		}
		after = page[len(page)-1].key
	}
}

func nsTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// sideUpdate runs fn in one transaction that first takes the side-table
// advisory lock: side transactions of every instance on the database run one
// at a time, so read-modify-write is safe, as Update promises. The commit is
// durable when it returns (synchronous_commit is the server's default).
func (s *pgStore) sideUpdate(ctx context.Context, fn func(tx SideTx) error) error {
	tx, err := s.pgDB().BeginTx(ctx, nil)
	if err != nil {
		return outcome.Errorf(outcome.Error, "begin side-table update: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, pgLockSide); err != nil {
		return outcome.Errorf(outcome.Error, "lock side tables: %w", err)
	}
	ptx := &pgSideTx{ctx: ctx, q: tx, now: s.env.Clock.Now()}
	if err := fn(ptx); err != nil {
		return err
	}
	if !ptx.wrote {
		return nil
	}
	if err := tx.Commit(); err != nil {
		return outcome.Errorf(outcome.Error, "commit side-table update: %w", err)
	}
	return nil
}

// sideView runs fn on the reserved pool, outside a transaction.
func (s *pgStore) sideView(ctx context.Context, fn func(tx SideTx) error) error {
	return fn(&pgSideTx{ctx: ctx, q: s.pgDB(), now: s.env.Clock.Now(), readOnly: true})
}

// removeExpired deletes the side entries whose expiry has passed and
// counts the live ones: Maintain's side-table part on PostgreSQL.
func (s *pgStore) removeExpired(ctx context.Context) (live, removed int, err error) {
	now := s.env.Clock.Now().UnixNano()
	tx, err := s.pgDB().BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, pgLockSide); err != nil {
		return 0, 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM grasp_side WHERE expires_ns <> 0 AND expires_ns <= $1`, now)
	if err != nil {
		return 0, 0, fmt.Errorf("delete expired side entries: %w", err)
	}
	n, _ := res.RowsAffected()
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM grasp_side`).Scan(&live); err != nil {
		return 0, int(n), fmt.Errorf("count side entries: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("delete expired side entries: %w", err)
	}
	return live, int(n), nil
}
