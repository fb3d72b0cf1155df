package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"
)

// pgLockLeader is the advisory lock whose holder is the leader (see Lead).
const pgLockLeader int64 = 0x67727370_00000003

// lead asks for the lease every Lease/3 and runs a term while it holds it.
func (s *pgStore) lead(ctx context.Context, o LeadOptions, lead func(ctx context.Context)) error {
	if o.Lease <= 0 {
		return errors.New("store: LeadOptions.Lease must be positive")
	}
	every := o.Lease / 3
	clk := s.env.Clock
	for {
		if conn, err := s.pools.lease.Conn(ctx); err == nil {
			var got bool
			err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, pgLockLeader).Scan(&got)
			if err == nil && got {
				s.log.Info("this instance leads: running the singletons")
				s.leadTerm(ctx, conn, every, o, lead)
			} else {
				conn.Close()
			}
		} else if ctx.Err() == nil {
			s.log.Warn("cannot reach postgres to ask for the leader lease", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(every):
		}
	}
}

// leadTerm runs lead on conn's lease until ctx ends, the session cannot be
// confirmed, or lead returns; it gives the lease back.
func (s *pgStore) leadTerm(ctx context.Context, conn *sql.Conn, every time.Duration, o LeadOptions, lead func(ctx context.Context)) {
	term, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	o.OnChange(true)
	go func() {
		defer close(done)
		lead(term)
	}()
	healthy := true
renew:
	for {
		select {
		case <-ctx.Done():
			break renew
		case <-done:
			break renew
		case <-s.env.Clock.After(every):
			if err := confirm(ctx, conn, every); err != nil {
				if ctx.Err() == nil {
					s.log.Warn("lost the leader lease: stopping the singletons", "error", err)
				}
				healthy = false
				break renew
			}
		}
	}
	cancel()
	<-done
	o.OnChange(false)
	if healthy {
		if _, err := conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, pgLockLeader); err != nil {
			healthy = false
		}
	}
	if !healthy { // never reuse a session that may still hold the lease
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	conn.Close()
	s.log.Info("this instance no longer leads")
}

// confirm checks that the session holding the lease is alive, waiting at
// most d (a real-time bound on one round trip).
func confirm(ctx context.Context, conn *sql.Conn, d time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, max(d, time.Second))
	defer cancel()
	_, err := conn.ExecContext(cctx, `SELECT 1`)
	return err
}
