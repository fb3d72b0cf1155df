package store

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"github.com/fiatjaf/eventstore"
	pgstore "github.com/fiatjaf/eventstore/postgresql"
	"github.com/hashicorp/go-hclog"
	"github.com/jmoiron/sqlx"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/outcome"
)

// pgStore is the shared backend: events, side tables and the privacy
// record in PostgreSQL, on every grasp instance using the database. Its
// commit is durable on its own, so writes go straight to the server, whose
// unique id index settles duplicate races. New events go in groups, one
// statement and one commit for those arriving together (pg_write.go);
// replacements and deletions through the eventstore library's backend (on
// the reserved pool of pg_pool.go); reads are pg_query.go's own, paged. Nothing is opened under the data dir.
type pgStore struct {
	opts Options
	env  env.Env
	log  hclog.Logger
	m    *metrics
	// closed is the Store's: set when Close began.
	closed *atomic.Bool
	events *pgstore.PostgresBackend
	pools  *pgPools
	// session holds this instance's uncontended repository locks
	// (pg_lock.go).
	session pgLockSession
	// own and delivered are the ids this instance stored and the ids
	// Follow delivered (pg_feed.go).
	own, delivered *idRing
	// marks are the markers CaughtUp waits for (pg_caughtup.go).
	marks *pgMarks
	// inserts and privacy commit new events and privacy records in
	// groups (pg_write.go).
	inserts, privacy pgGroup
}

var _ backend = (*pgStore)(nil)

// openPostgres connects to PostgreSQL: events and side tables live there,
// and nothing is opened under Dir.
func openPostgres(st *Store) (backend, error) {
	s := &pgStore{opts: st.opts, env: st.env, log: st.log, m: st.m, closed: &st.closed,
		own: newIDRing(pgRememberIDs), delivered: newIDRing(pgRememberIDs), marks: newPGMarks()}
	var err error
	if s.events, s.pools, err = connectPostgres(s.opts, s.log); err != nil {
		return nil, err
	}
	return s, nil
}

// connectPostgres connects, creates the schema and sizes the pools (F25).
func connectPostgres(opts Options, log hclog.Logger) (*pgstore.PostgresBackend, *pgPools, error) {
	ctx := context.Background()
	lockDB, err := sql.Open("postgres", opts.PostgresURL)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open postgres: %w", err)
	}
	defer lockDB.Close()
	lockDB.SetMaxOpenConns(1)
	allowed, err := pgAllowance(ctx, lockDB)
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	total, warn, err := poolSize(opts, allowed)
	if err != nil {
		return nil, nil, err
	}
	if warn != "" {
		log.Warn(warn)
	}
	sizes := splitPool(total)
	reserved, err := sqlx.Open("postgres", opts.PostgresURL)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open postgres: %w", err)
	}
	be := &pgstore.PostgresBackend{
		DB:          reserved,
		DatabaseURL: opts.PostgresURL,
		// Its AfterSave hook would otherwise prune all but 100 events per
		// author and kind.
		KeepRecentEvents: true,
	}
	// Init creates the event table (and sets its own pool size, which
	// openPools replaces).
	if err := migratePostgres(ctx, lockDB, be.Init); err != nil {
		reserved.Close()
		return nil, nil, err
	}
	pools, err := openPools(opts.PostgresURL, sizes, opts.PostgresQueriesPerIP, reserved)
	if err != nil {
		reserved.Close()
		return nil, nil, err
	}
	log.Info("postgres connections", "allowed_by_server", allowed, "pool", sizes.Total,
		"queries", sizes.Queries, "reserved", sizes.Reserved, "locks", sizes.LockSession+sizes.Locks,
		"queries_per_ip", pools.perClient.max)
	return be, pools, nil
}

// pgDB is the reserved pool: writes, side tables, the server's own reads.
func (s *pgStore) pgDB() *sql.DB { return s.pools.reserved.DB }

// start has nothing to run: Follow and Lead are the caller's loops.
func (s *pgStore) start() {}

// discard closes the connections before start ran.
func (s *pgStore) discard() { s.close() }

// close ends the lock session and closes the pools.
func (s *pgStore) close() error {
	s.session.closeSession()
	if err := s.pools.close(); err != nil {
		return fmt.Errorf("store: close postgres connections: %w", err)
	}
	return nil
}

// readOnly is "": PostgreSQL refuses a write itself when it cannot take it.
func (s *pgStore) readOnly() string { return "" }

func (s *pgStore) collectors() []prometheus.Collector {
	return []prometheus.Collector{newPGPoolCollector(s.pools)}
}

// checkEvent refuses a created_at beyond the 32-bit signed column.
func (s *pgStore) checkEvent(evt *nostr.Event) error {
	return checkCreatedAt(evt, math.MaxInt32)
}

// write runs the insert, replacement or deletion on the server and counts
// it; a duplicate returns eventstore.ErrDupEvent itself, unwrapped.
func (s *pgStore) write(ctx context.Context, kind opKind, evt *nostr.Event) error {
	err := s.writeEvent(ctx, kind, evt)
	s.m.countWrite(kind, err)
	return err
}

func (s *pgStore) writeEvent(ctx context.Context, kind opKind, evt *nostr.Event) error {
	if s.closed.Load() {
		return errClosed
	}
	var err error
	if kind != opDelete {
		// before the insert commits: its notification must find the id
		// here, or this instance would deliver its own event twice
		s.own.add(evt.ID)
	}
	if evt.Tags == nil && kind != opDelete {
		// An event sent without "tags" decodes to nil, which the eventstore
		// writes as JSON null: its trigger then fails to index the row.
		// Its id and signature cover "[]", so store that.
		e := *evt
		e.Tags = nostr.Tags{}
		evt = &e
	}
	switch kind {
	case opSave:
		err = s.saveEvent(ctx, evt)
	case opReplace:
		err = s.events.ReplaceEvent(ctx, evt)
	default:
		err = s.events.DeleteEvent(ctx, evt)
	}
	if err == nil || err == eventstore.ErrDupEvent {
		return err
	}
	return outcome.Errorf(outcome.Error, "%s event in postgres: %w", kind, err)
}

// maintain has nothing to do after the side tables: no local database to
// collect or measure.
func (s *pgStore) maintain(context.Context) error { return nil }

// backup writes nothing: no local database, pg_dump has it all.
func (s *pgStore) backup(io.Writer) error { return nil }
