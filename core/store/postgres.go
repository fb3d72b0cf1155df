package store

import (
	"context"
	"database/sql"
	"fmt"

	pgstore "github.com/fiatjaf/eventstore/postgresql"
)

// Query caps of the postgres backend, raised from its defaults (100 rows,
// 500 ids, 500 authors, 10 kinds, 100 tag values): 100 rows would cut every
// negentropy session to the newest 100 events, and GRASP sync filters name
// more than 10 NIP-34 kinds and send tag values in batches of 100.
const (
	pgIDsLimit       = 5000
	pgAuthorsLimit   = 1000
	pgKindsLimit     = 100
	pgTagValuesLimit = 1000
)

// openPostgres connects and creates the schema. Its QueryLimit is the
// largest limit the store ever asks for, NegentropyMax: events.QueryEvents
// always passes an explicit limit, so REQs still get DefaultLimit/MaxLimit.
func openPostgres(opts Options) (*pgstore.PostgresBackend, error) {
	pg := &pgstore.PostgresBackend{
		DatabaseURL:       opts.PostgresURL,
		QueryLimit:        max(opts.Limits.NegentropyMaxEvents+1, opts.Limits.MaxLimit),
		QueryIDsLimit:     pgIDsLimit,
		QueryAuthorsLimit: pgAuthorsLimit,
		QueryKindsLimit:   pgKindsLimit,
		QueryTagsLimit:    pgTagValuesLimit,
		// Otherwise its AfterSave hook would prune all but 100 events per
		// author and kind.
		KeepRecentEvents: true,
	}
	lockDB, err := sql.Open("postgres", opts.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	defer lockDB.Close()
	if err := migratePostgres(context.Background(), lockDB, pg.Init); err != nil {
		if pg.DB != nil {
			pg.DB.Close()
		}
		return nil, err
	}
	return pg, nil
}

// pgDB is the connection pool of the postgres backend.
func (s *Store) pgDB() *sql.DB { return s.pg.DB.DB }
