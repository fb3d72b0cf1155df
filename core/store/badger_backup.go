package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/grasp-dev/grasp/core/env"
)

// backup dumps the database from one snapshot (Store.Backup).
func (s *badgerStore) backup(w io.Writer) error {
	// One producer, so one read transaction: with badger's default of
	// several, each key range is read at its own instant.
	stream := s.db.NewStream()
	stream.NumGo = 1
	stream.LogPrefix = "store backup"
	if _, err := stream.Backup(w, 0); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// Closed is the database under a data dir no server has open, opened for
// `grasp admin backup --offline`. It holds badger's directory lock until
// Close, so no server starts on the data dir meanwhile.
type Closed struct{ db *badger.DB }

// OpenClosed opens the database under opts.Dir. A running server holds
// badger's directory lock, so this fails ("is the server running?")
// instead of reading files that change.
func OpenClosed(opts Options, e env.Env) (*Closed, error) {
	db, err := openRaw(opts, e, false)
	if err != nil {
		return nil, err
	}
	return &Closed{db: db}, nil
}

// Backup writes the same dump as Store.Backup.
func (c *Closed) Backup(w io.Writer) error {
	if _, err := c.db.Backup(w, 0); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// Close releases the database.
func (c *Closed) Close() error { return c.db.Close() }

// Restore loads a dump written by Backup into a new database under
// opts.Dir, whose store directory must not exist or be empty.
func Restore(opts Options, e env.Env, r io.Reader) error {
	db, err := openRaw(opts, e, true)
	if err != nil {
		return err
	}
	lerr := db.Load(r, 256)
	if cerr := db.Close(); lerr == nil && cerr != nil {
		lerr = cerr
	}
	if lerr != nil {
		return fmt.Errorf("store: restore into %s: %w", filepath.Join(opts.Dir, "store"), lerr)
	}
	return nil
}

// openRaw opens the badger database with the options the server uses, so
// its write-ahead log replays as the server's would. fresh requires an empty
// store directory; otherwise the database must exist.
func openRaw(opts Options, e env.Env, fresh bool) (*badger.DB, error) {
	e = e.OrDefaults()
	opts.Backend = BackendBadger // the local database, whatever the backend
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &badgerStore{opts: opts, log: e.Log, dbDir: filepath.Join(opts.Dir, "store"),
		vthreshold: valueThreshold(int64(opts.MemTableMB) << 20)}
	if opts.ValueThreshold > 0 {
		s.vthreshold = min(opts.ValueThreshold, s.vthreshold)
	}
	ents, err := os.ReadDir(s.dbDir)
	switch {
	case fresh && err == nil && len(ents) > 0:
		return nil, fmt.Errorf("store: restore into %s: not empty", s.dbDir)
	case fresh && err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("store: %w", err)
	case !fresh && err != nil:
		return nil, fmt.Errorf("store: no database at %s: %w", s.dbDir, err)
	}
	if _, err := os.Stat(filepath.Join(s.dbDir, badger.ManifestFilename)); !fresh && err != nil {
		return nil, fmt.Errorf("store: no database at %s: %w", s.dbDir, err)
	}
	if err := os.MkdirAll(s.dbDir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", s.dbDir, err)
	}
	db, err := badger.Open(s.badgerOptions(badger.DefaultOptions(s.dbDir)))
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("store: %s is in use (is the server running?): %w", s.dbDir, err)
		}
		return nil, fmt.Errorf("store: open badger at %s: %w", s.dbDir, err)
	}
	return db, nil
}
