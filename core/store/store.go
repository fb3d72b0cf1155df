package store

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
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
	// (pg_pool.go splits them); 0 derives it from what the server allows
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

	// ResidentFileMB bounds this process's file-backed resident memory
	// (RssFile): above it the pages of badger's tables and sealed
	// value-log files are dropped from its mappings, checked every
	// residentCheckEvery (badger_resident.go). 0 takes config's default;
	// negative never drops them. Linux only.
	ResidentFileMB int

	// ValueThreshold is badger's value-log threshold in bytes: records at
	// least this big are written once to the value log instead of the LSM
	// tree, where they would be written twice (WAL, then level-0 table) and
	// again by every compaction (default DefaultValueThreshold).
	ValueThreshold int64

	// ReadOnly opens the badger database without writing anything under
	// Dir (badger_readonly.go): reads are served, every write is refused with
	// ReadOnlyReason. The server asks for it when the disk is below its
	// free-space watermark at start; New also falls back to it when the
	// disk has no room to open the database for writing.
	ReadOnly       bool
	ReadOnlyReason string

	// ParallelLogSync syncs badger's value log and its WALs at the same
	// time after a group commit that wrote to the value log, instead of
	// one after the other: about one device flush per commit instead of
	// two, at the price of a window in which a power cut can leave the
	// unacknowledged batch's records pointing past the value log's end
	// (badger_sync.go). Default false.
	ParallelLogSync bool

	// UnsafeNoSync skips the fsync after each group commit. Only for
	// benchmarks and throwaway test relays: OK no longer means durable.
	UnsafeNoSync bool

	// noPack keeps every content inline (no packed content records), as
	// grasp wrote stores before packing existed; for tests of old stores.
	noPack bool

	// badgerMetrics turns on badger's expvar counters (bytes written to
	// level 0, by compactions, to the value log) for benchmarks that say
	// where written bytes go; they cost a little on every write.
	badgerMetrics bool
	// badgerTweak, when set, edits badger's options last: benchmarks
	// that compare tunings (writes_bench_test.go).
	badgerTweak func(badger.Options) badger.Options
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
	// DefaultValueThreshold sends every event record (at least 136
	// bytes: id, pubkey, signature) and packed contents to the value log,
	// where each is written once, and keeps the index keys (empty values)
	// and small side-table values in the tree. At 512 (issue 15 part 3)
	// the records of statuses and short comments stayed in the tree and
	// were rewritten by every compaction: 345 B of tables per event, 189
	// at 128 (BenchmarkWritesAtScale; issue 27 part 4).
	DefaultValueThreshold = 128
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
	setInt(&o.ResidentFileMB, def.ResidentFileMB)
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

// Store is the open database: events and side tables, on the backend New
// chose (backend.go).
type Store struct {
	opts  Options
	env   env.Env
	log   hclog.Logger
	dbDir string
	m     *metrics
	be    backend
	// readOnly is be.readOnly(), fixed at open: every write is refused
	// with it (readonly.go).
	readOnly string
	events   *events
	side     *Side
	closed   atomic.Bool

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
	// The one choice of backend: with PostgreSQL no local database is
	// opened (issue 24 part 8), with badger nothing of PostgreSQL.
	open := openBadger
	if opts.Backend == BackendPostgres {
		open = openPostgres
	}
	be, err := open(s)
	if err != nil {
		return nil, err
	}
	s.be, s.readOnly = be, be.readOnly()
	s.events = &events{s: s}
	if s.readOnly != "" {
		m.readOnly.Set(1)
	}
	// Registered last, so a failed Open leaves the registry as it was.
	if err := m.register(e.Metrics, be.collectors()...); err != nil {
		be.discard()
		return nil, err
	}
	s.side = &Side{s: s}
	be.start()
	log.Info("store opened", "dir", s.dbDir, "backend", opts.Backend, "max_limit", opts.Limits.MaxLimit,
		"default_limit", opts.Limits.DefaultLimit, "negentropy_max", opts.Limits.NegentropyMaxEvents,
		"sync", !opts.UnsafeNoSync, "read_only", s.readOnly != "")
	return s, nil
}

// Events returns the event store to wire into khatru. It also implements
// eventstore.Counter.
func (s *Store) Events() EventStore { return s.events }

// Side returns the durable side tables.
func (s *Store) Side() *Side { return s.side }

// Backup writes a consistent dump of the badger database (events and side
// tables; with backend postgres neither: both live in PostgreSQL) to w while
// the store serves. It reads one snapshot: every write committed before the
// snapshot is in the dump, none after it. A held event being released is
// then in purgatory, in the store or in both (purgatory.Published removes
// it only after it is stored), never in neither; a restored server releases
// what is still held. Load it with Restore.
func (s *Store) Backup(w io.Writer) error {
	if s.closed.Load() {
		return errors.New("store: backup of a closed store")
	}
	return s.be.backup(w)
}

// Close stops accepting writes, commits and syncs what is queued, and closes
// the database. Call it after the relay stopped serving and the scheduler
// stopped calling Maintain. It is safe to call more than once; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.closeErr = s.be.close()
		s.log.Info("store closed", "dir", s.dbDir)
	})
	return s.closeErr
}
