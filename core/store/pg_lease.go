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

// LeadOptions configure Lead.
type LeadOptions struct {
	// Lease bounds how long a dead or cut-off leader keeps the singletons:
	// the leader confirms its session every Lease/3 and steps down when it
	// cannot, a follower asks for the lease every Lease/3. Required.
	Lease time.Duration
	// OnChange is told when this instance becomes leader (true) and when
	// it stops being one (false); nil: not told.
	OnChange func(leader bool)
}

// Lead runs lead while this instance is the leader of the instances sharing
// the store, until ctx ends: lead gets a context that ends when leadership
// is lost, and must return then. With badger the store has one process,
// which leads at once and for good.
//
// With PostgreSQL the lease is a session advisory lock held on one
// connection: when the leader's process dies or its session is closed, the
// server drops the lock and a follower takes it at its next try, within
// Lease/3; a leader that cannot confirm its session within Lease/3 stops
// its singletons first. Times are on the store's clock.
func (s *Store) Lead(ctx context.Context, o LeadOptions, lead func(ctx context.Context)) error {
	if o.OnChange == nil {
		o.OnChange = func(bool) {}
	}
	if s.pg == nil {
		o.OnChange(true)
		lead(ctx)
		o.OnChange(false)
		return nil
	}
	if o.Lease <= 0 {
		return errors.New("store: LeadOptions.Lease must be positive")
	}
	every := o.Lease / 3
	clk := s.env.Clock
	for {
		if conn, err := s.pg.pools.lease.Conn(ctx); err == nil {
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
func (s *Store) leadTerm(ctx context.Context, conn *sql.Conn, every time.Duration, o LeadOptions, lead func(ctx context.Context)) {
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
