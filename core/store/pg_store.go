package store

import (
	"context"
	"database/sql"
	"fmt"

	pgstore "github.com/fiatjaf/eventstore/postgresql"
	"github.com/hashicorp/go-hclog"
	"github.com/jmoiron/sqlx"
)

// pgBackend is the store's PostgreSQL side: the eventstore backend that
// writes events (on the reserved pool) and the pools of pgpool.go. Reads
// are pgquery.go's own.
type pgBackend struct {
	events  *pgstore.PostgresBackend
	pools   *pgPools
	session pgLockSession // pglock.go
}

// openPostgres connects, creates the schema and sizes the pools (F25).
func openPostgres(opts Options, log hclog.Logger) (*pgBackend, error) {
	ctx := context.Background()
	lockDB, err := sql.Open("postgres", opts.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	defer lockDB.Close()
	lockDB.SetMaxOpenConns(1)
	allowed, err := pgAllowance(ctx, lockDB)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	total, warn, err := poolSize(opts, allowed)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		log.Warn(warn)
	}
	sizes := splitPool(total)
	reserved, err := sqlx.Open("postgres", opts.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
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
		return nil, err
	}
	pools, err := openPools(opts.PostgresURL, sizes, opts.PostgresQueriesPerIP, reserved)
	if err != nil {
		reserved.Close()
		return nil, err
	}
	log.Info("postgres connections", "allowed_by_server", allowed, "pool", sizes.Total,
		"queries", sizes.Queries, "reserved", sizes.Reserved, "locks", sizes.LockSession+sizes.Locks,
		"queries_per_ip", pools.perClient.max)
	return &pgBackend{events: be, pools: pools}, nil
}

// pgDB is the reserved pool: writes, side tables, the server's own reads.
func (s *Store) pgDB() *sql.DB { return s.pg.pools.reserved.DB }
