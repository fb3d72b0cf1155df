// Package store owns grasp's durable state: the Nostr event store wired into
// khatru and the side tables that hold non-event state (purgatory entries,
// relay health, rejected and expired ids, placeholders).
//
// Both live in one badger database under <data dir>/store, on disjoint key
// prefixes, so they share one write-ahead log, one memtable and cache budget
// and one fsync per group commit. A write is acknowledged only after it is
// fsynced: an OK true from the relay means the event survives kill -9 and a
// power cut. Concurrent writes are funnelled through a single writer goroutine
// that applies a batch and syncs once for all of it (strfry's design), because
// badger's own SyncWrites issues one msync per transaction.
//
// With Backend "postgres" events and the side tables live in PostgreSQL
// instead (its commit is durable on its own), shared by every grasp instance
// on the database: the schema is versioned (pgschema.go) and migrated at
// start-up under an advisory lock, side-table transactions serialise across
// instances (pgside.go), and Follow fans stored events out between them
// (pgfeed.go). Its connections are a bounded pool split so that clients'
// queries never take what writes, locks and the leader lease need
// (pgpool.go), and reads are paged so that no connection waits on a client
// (pgquery.go). No local database is opened then.
//
// On a disk too full to open the database for writing, badger is opened
// read-only: reads are served and every write is refused (readonly.go).
//
// Events whose content exceeds what the backend's codec holds (64 KiB) are
// stored in two records (large.go), so the relay's content limit is not
// bounded by the codec.
//
// This package never decides whether an event is acceptable; it only refuses
// what it cannot store faithfully (malformed ids, fields beyond the binary
// encoding's limits). How many events a query returns is decided here, from
// the relay limits (max_limit, default_limit, negentropy_max_events).
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	ebadger "github.com/fiatjaf/eventstore/badger"
	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// Options configures Open. The zero value of every field except Dir selects
// the default documented on it.
type Options struct {
	// Dir is the data directory; the database lives in Dir/store.
	Dir string

	// Backend selects where events live: "badger" (default, embedded) or
	// "postgres" (scale-out; PostgresURL is then required). With postgres
	// the side tables live there too.
	Backend string
	// PostgresURL is the lib/pq connection string for Backend "postgres".
	PostgresURL string
	// PostgresPool is how many connections this instance opens at most
	// (pgpool.go splits them); 0 derives it from what the server allows
	// divided by PostgresInstances (default 2). PostgresQueriesPerIP bounds
	// the stored queries one client address runs at once (default 4).
	PostgresPool, PostgresInstances, PostgresQueriesPerIP int

	// Limits gives the query limits: a REQ gets at most MaxLimit events,
	// DefaultLimit when it asks for none, and a negentropy session
	// (eventstore.SetNegentropy) up to NegentropyMaxEvents. Zero fields take
	// config's defaults.
	Limits config.Limits

	// MemTableMB is the size of one memtable; BlockCacheMB the block cache.
	// Zero takes config's [store] defaults.
	MemTableMB   int
	BlockCacheMB int
	// NumMemtables bounds memtables held in memory before writes stall
	// (default 3).
	NumMemtables int
	// IndexCacheMB caps memory for table indexes and bloom filters
	// (default 16). With 0 badger keeps every index in memory.
	IndexCacheMB int
	// NumCompactors is the number of compaction goroutines (default 2).
	NumCompactors int
	// ValueLogFileMB is the size of one value-log file (default 64).
	ValueLogFileMB int

	// MaxBatch caps how many writes share one fsync (default 1024).
	MaxBatch int

	// ValueThreshold is badger's value-log threshold in bytes: records at
	// least this big are written once to the value log instead of the LSM
	// tree, where they would be written twice (WAL, then level-0 table) and
	// again by every compaction (default DefaultValueThreshold).
	ValueThreshold int64

	// ReadOnly opens the badger database without writing anything under
	// Dir (readonly.go): reads are served, every write is refused with
	// ReadOnlyReason. The server asks for it when the disk is below its
	// free-space watermark at start; New also falls back to it when the
	// disk has no room to open the database for writing.
	ReadOnly       bool
	ReadOnlyReason string

	// UnsafeNoSync skips the fsync after each group commit. Only for
	// benchmarks and throwaway test relays: OK no longer means durable.
	UnsafeNoSync bool

	// noPack keeps every content inline (no packed content records), as
	// grasp wrote stores before packing existed; for tests of old stores.
	noPack bool
}

// Backends for Options.Backend.
const (
	BackendBadger   = "badger"
	BackendPostgres = "postgres"
)

// Defaults of the badger tuning that grasp.toml does not expose.
const (
	DefaultNumMemtables   = 3
	DefaultIndexCacheMB   = 16
	DefaultNumCompactors  = 2
	DefaultValueLogFileMB = 64
	DefaultMaxBatch       = 1024
	// DefaultValueThreshold sends event records and packed contents to the
	// value log and keeps the index keys (empty values) and small records
	// in the tree: bytes written per event fall from ~1.5x to ~1x the
	// event's JSON (docs/benchmarks.md, issue 15 part 3).
	DefaultValueThreshold = 512
)

func (o Options) withDefaults() Options {
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	o.Limits = o.Limits.WithDefaults()
	def := config.Default().Store
	setInt(&o.MemTableMB, def.MemtableMB)
	setInt(&o.NumMemtables, DefaultNumMemtables)
	setInt(&o.BlockCacheMB, def.BlockCacheMB)
	setInt(&o.IndexCacheMB, DefaultIndexCacheMB)
	setInt(&o.NumCompactors, DefaultNumCompactors)
	setInt(&o.ValueLogFileMB, DefaultValueLogFileMB)
	setInt(&o.MaxBatch, DefaultMaxBatch)
	setInt(&o.PostgresInstances, def.PostgresInstances)
	setInt(&o.PostgresQueriesPerIP, def.PostgresQueriesPerIP)
	if o.Backend == "" {
		o.Backend = BackendBadger
	}
	return o
}

func (o Options) validate() error {
	if o.Dir == "" {
		return errors.New("store: Dir is required")
	}
	switch o.Backend {
	case BackendBadger:
	case BackendPostgres:
		if o.PostgresURL == "" {
			return errors.New("store: backend postgres needs PostgresURL")
		}
	default:
		return fmt.Errorf("store: unknown backend %q (want %q or %q)", o.Backend, BackendBadger, BackendPostgres)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"Limits.MaxLimit", o.Limits.MaxLimit}, {"Limits.DefaultLimit", o.Limits.DefaultLimit},
		{"Limits.NegentropyMaxEvents", o.Limits.NegentropyMaxEvents}, {"MemTableMB", o.MemTableMB},
		{"NumMemtables", o.NumMemtables}, {"BlockCacheMB", o.BlockCacheMB},
		{"IndexCacheMB", o.IndexCacheMB}, {"NumCompactors", o.NumCompactors},
		{"ValueLogFileMB", o.ValueLogFileMB}, {"MaxBatch", o.MaxBatch},
		{"PostgresPool", o.PostgresPool}, {"PostgresInstances", o.PostgresInstances},
		{"PostgresQueriesPerIP", o.PostgresQueriesPerIP},
	} {
		if f.v < 0 {
			return fmt.Errorf("store: %s must not be negative (got %d)", f.name, f.v)
		}
	}
	if o.Limits.DefaultLimit > o.Limits.MaxLimit {
		return fmt.Errorf("store: DefaultLimit %d exceeds MaxLimit %d", o.Limits.DefaultLimit, o.Limits.MaxLimit)
	}
	if o.PostgresPool != 0 && o.PostgresPool < config.MinPostgresPool {
		return fmt.Errorf("store: PostgresPool must be 0 (derived) or at least %d (got %d)", config.MinPostgresPool, o.PostgresPool)
	}
	if o.NumMemtables < 2 {
		return fmt.Errorf("store: NumMemtables must be at least 2 (got %d)", o.NumMemtables)
	}
	// Badger refuses fewer than two compactors unless compaction is off.
	if o.NumCompactors < 2 {
		return fmt.Errorf("store: NumCompactors must be at least 2 (got %d)", o.NumCompactors)
	}
	return nil
}

// Store is the open database: events and side tables.
type Store struct {
	opts    Options
	env     env.Env
	log     hclog.Logger
	dbDir   string
	backend *ebadger.BadgerBackend
	pg      *pgBackend // nil unless Backend is postgres
	// own and delivered are the ids this instance stored and the ids
	// Follow delivered (postgres only; pgfeed.go).
	own, delivered *idRing
	db             *badger.DB
	m              *metrics
	w              *writer
	wals           *walSyncer
	// vthreshold is badger's value-log threshold as configured.
	vthreshold int64
	events     *events
	side       *Side
	// neg is the negentropy index (negentropy.go); nil with postgres.
	neg *negIndex
	// hasLarge is set once the database holds a content record, large or
	// packed (large.go).
	hasLarge atomic.Bool
	// sweepFrom is where the next sweep of content records starts; only
	// the writer goroutine uses it.
	sweepFrom []byte
	closed    atomic.Bool
	// readOnly says why the badger database was opened read-only ("":
	// it was not); every write is refused with it (readonly.go).
	readOnly string
	// sideMu serialises side-table write transactions (see Side.commit).
	sideMu sync.Mutex

	closeOnce sync.Once
	closeErr  error
}

// New opens (creating if needed) the store under opts.Dir. env's clock drives
// side-table expiry and latency metrics.
func New(opts Options, e env.Env) (*Store, error) {
	e = e.OrDefaults()
	log := e.Log
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m := newMetrics()
	s := &Store{opts: opts, env: e, log: log, dbDir: filepath.Join(opts.Dir, "store"), m: m}
	// One branch per backend: with PostgreSQL no local database is opened
	// (issue 24 part 8), with badger nothing of PostgreSQL.
	var err error
	if opts.Backend == BackendPostgres {
		err = s.openPostgres()
	} else {
		err = s.openBadger()
	}
	if err != nil {
		return nil, err
	}
	if s.readOnly != "" {
		m.readOnly.Set(1)
	}
	// Registered last, so a failed Open leaves the registry as it was.
	if err := m.register(e.Metrics); err != nil {
		s.closeBackend()
		return nil, err
	}
	s.side = &Side{s: s}
	if s.pg == nil {
		s.startNegIndex() // before the writer: see negentropy.go
	}
	if s.w != nil {
		go s.w.run()
	}
	log.Info("store opened", "dir", s.dbDir, "backend", opts.Backend, "max_limit", opts.Limits.MaxLimit,
		"default_limit", opts.Limits.DefaultLimit, "negentropy_max", opts.Limits.NegentropyMaxEvents,
		"sync", !opts.UnsafeNoSync, "read_only", s.readOnly != "")
	return s, nil
}

// openPostgres connects to PostgreSQL: events and side tables live there,
// and nothing is opened under Dir.
func (s *Store) openPostgres() error {
	var err error
	if s.pg, err = openPostgres(s.opts, s.log); err != nil {
		return err
	}
	s.events = &events{s: s, be: s.pg.events, direct: true}
	s.m.pgPools = newPGPoolCollector(s.pg.pools)
	s.own, s.delivered = newIDRing(pgRememberIDs), newIDRing(pgRememberIDs)
	return nil
}

// openBadger opens the badger database under Dir/store, creating it if
// needed, read-only when Options.ReadOnly says so or when the disk has no
// room left to open it for writing (readonly.go).
func (s *Store) openBadger() error {
	dbDir := s.dbDir
	if err := os.MkdirAll(dbDir, 0o700); err != nil {
		return fmt.Errorf("store: create %s: %w", dbDir, err)
	}
	s.vthreshold = valueThreshold(int64(s.opts.MemTableMB) << 20)
	vt := s.opts.ValueThreshold
	if vt <= 0 {
		vt = DefaultValueThreshold
	}
	s.vthreshold = min(vt, s.vthreshold)
	if s.opts.ReadOnly {
		s.readOnly = s.opts.ReadOnlyReason
		if s.readOnly == "" {
			s.readOnly = "the store was opened read-only"
		}
	} else if _, err := os.Stat(filepath.Join(dbDir, badger.ManifestFilename)); errors.Is(err, os.ErrNotExist) {
		if err := s.stampFresh(); err != nil {
			return err
		}
		s.log.Info("store created", "dir", dbDir)
	}
	err := s.initBadger()
	if err != nil && s.readOnly == "" && noSpace(err) {
		s.readOnly = "the disk holding " + dbDir + " is full: the store could not be opened for writing (" + err.Error() + ")"
		s.log.Error("no space left to open the store for writing: opening it read-only; reads are served, every write is refused until space is freed and grasp restarted", "dir", dbDir, "error", err)
		err = s.initBadger()
	}
	if err != nil {
		return err
	}
	s.db = s.backend.DB
	large, err := anyLarge(s.db)
	if err != nil {
		s.db.Close()
		return fmt.Errorf("store: look for large contents: %w", err)
	}
	s.hasLarge.Store(large)
	s.events = &events{s: s, be: s.backend}
	if s.readOnly == "" {
		s.wals = newWALSyncer(dbDir)
		s.w = newWriter(s, s.opts.MaxBatch)
	}
	return nil
}

// initBadger opens the eventstore backend on Dir/store (read-only when
// s.readOnly is set).
func (s *Store) initBadger() error {
	s.backend = &ebadger.BadgerBackend{
		Path:                  s.dbDir,
		MaxLimit:              s.opts.Limits.MaxLimit,
		BadgerOptionsModifier: s.badgerOptions,
	}
	if err := s.backend.Init(); err != nil {
		if s.backend.DB != nil { // opened, then a migration failed
			s.backend.DB.Close()
		}
		return fmt.Errorf("store: open badger at %s: %w", s.dbDir, err)
	}
	// Init ties the negentropy cap to MaxLimit whenever MaxLimit is set;
	// negentropy sessions need the whole matching set, so set it afterwards.
	s.backend.MaxLimitNegentropy = s.opts.Limits.NegentropyMaxEvents + 1 // see effectiveLimit
	return nil
}

// closeBackend closes what openPostgres or openBadger opened.
func (s *Store) closeBackend() {
	if s.db != nil {
		s.db.Close()
	}
	if s.pg != nil {
		s.pg.session.closeSession()
		s.pg.pools.close()
	}
}

// badgerOptions replaces badger's defaults with a budget sized for a relay:
// see the Options fields for the reasons.
func (s *Store) badgerOptions(o badger.Options) badger.Options {
	const mb = 1 << 20
	o = o.WithLogger(badgerLogger{s.log.Named("badger")}).
		WithMemTableSize(int64(s.opts.MemTableMB) * mb).
		WithNumMemtables(s.opts.NumMemtables).
		WithBlockCacheSize(int64(s.opts.BlockCacheMB) * mb).
		WithIndexCacheSize(int64(s.opts.IndexCacheMB) * mb).
		WithNumCompactors(s.opts.NumCompactors).
		WithValueLogFileSize(int64(s.opts.ValueLogFileMB) * mb).
		WithValueThreshold(s.vthreshold).
		WithCompression(options.ZSTD).
		WithZSTDCompressionLevel(1).
		WithMetricsEnabled(false).
		// The writer goroutine syncs once per batch (see sync.go); badger's
		// SyncWrites would add one msync per transaction on top.
		WithSyncWrites(false).
		// Read-only: no LOCK pid file, memtable, value-log file or
		// compaction is written (readonly.go).
		WithReadOnly(s.readOnly != "")
	return o
}

// Events returns the event store to wire into khatru. It also implements
// eventstore.Counter.
func (s *Store) Events() EventStore { return s.events }

// Side returns the durable side tables.
func (s *Store) Side() *Side { return s.side }

// Close stops accepting writes, commits and syncs what is queued, and closes
// the database. Call it after the relay stopped serving and the scheduler
// stopped calling Maintain. It is safe to call more than once; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		var werr, cerr, perr error
		if s.w != nil {
			werr = s.w.stop()
		}
		if s.neg != nil {
			s.neg.close()
		}
		if s.wals != nil {
			s.wals.close()
		}
		// The backend's Close drops badger's error; close the DB directly.
		if s.db != nil {
			cerr = s.db.Close()
		}
		if s.pg != nil {
			s.pg.session.closeSession()
			perr = s.pg.pools.close()
		}
		switch {
		case werr != nil:
			s.closeErr = fmt.Errorf("store: final sync on close: %w", werr)
		case cerr != nil:
			s.closeErr = fmt.Errorf("store: close badger at %s: %w", s.dbDir, cerr)
		case perr != nil:
			s.closeErr = fmt.Errorf("store: close postgres connections: %w", perr)
		}
		s.log.Info("store closed", "dir", s.dbDir)
	})
	return s.closeErr
}
