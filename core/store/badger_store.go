package store

import (
	"context"
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
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/env"
)

// badgerStore is the embedded backend: events, side tables and the privacy
// record in one badger database under <data dir>/store, written through
// one group-commit writer (badger_writer.go) and made durable by
// fdatasync of its logs (badger_sync.go); the negentropy index
// (badger_negentropy.go) and the resident-memory check
// (badger_resident.go) run beside it. One process owns it: it has no other
// instances to follow, leads alone and needs no repository locks.
type badgerStore struct {
	opts  Options
	env   env.Env
	log   hclog.Logger
	m     *metrics
	dbDir string
	// backend is the eventstore library's badger backend: its Init opens
	// the database and migrates it, it counts (NIP-45) and hands out
	// record serials; grasp writes and queries itself.
	backend *ebadger.BadgerBackend
	db      *badger.DB
	w       *writer
	wals    *walSyncer
	// vthreshold is badger's value-log threshold as configured.
	vthreshold int64
	// neg is the negentropy index (badger_negentropy.go).
	neg *negIndex
	// ids is the id filter and idSeeks counts the lookups by id it did
	// not answer (badger_query_id.go).
	ids     *idFilter
	idSeeks atomic.Int64
	// recordReads counts the event records queries read from index keys
	// (candidate): what a query costs beyond the index walk, bounded by
	// its limit when the plan's index is exact (issue 27 part 3).
	recordReads atomic.Int64
	// hasLarge is set once the database holds a content record, large or
	// packed (badger_large.go).
	hasLarge atomic.Bool
	// sweepFrom is where the next sweep of content records starts; only
	// the writer goroutine uses it.
	sweepFrom []byte
	// residentStop ends the resident-memory check.
	residentStop, residentDone chan struct{}
	// gcMu is held by value-log GC and by dropResident.
	gcMu sync.Mutex
	// ro says why the database was opened read-only ("": it was not);
	// every write is refused with it (badger_readonly.go).
	ro string
	// sideMu serialises side-table write transactions (see commit).
	sideMu sync.Mutex
}

var _ backend = (*badgerStore)(nil)

// openBadger opens the badger database under Dir/store, creating it if
// needed, read-only when Options.ReadOnly says so or when the disk has no
// room left to open it for writing (badger_readonly.go).
func openBadger(st *Store) (backend, error) {
	s := &badgerStore{opts: st.opts, env: st.env, log: st.log, m: st.m, dbDir: st.dbDir}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *badgerStore) open() error {
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
		s.ro = s.opts.ReadOnlyReason
		if s.ro == "" {
			s.ro = "the store was opened read-only"
		}
	} else if _, err := os.Stat(filepath.Join(dbDir, badger.ManifestFilename)); errors.Is(err, os.ErrNotExist) {
		if err := s.stampFresh(); err != nil {
			return err
		}
		s.log.Info("store created", "dir", dbDir)
	}
	err := s.initBadger()
	if err != nil && s.ro == "" && noSpace(err) {
		s.ro = "the disk holding " + dbDir + " is full: the store could not be opened for writing (" + err.Error() + ")"
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
	if s.ro == "" {
		s.wals = newWALSyncer(dbDir, s.opts.ParallelLogSync)
		s.w = newWriter(s, s.opts.MaxBatch)
	}
	return nil
}

// initBadger opens the eventstore backend on Dir/store (read-only when
// s.ro is set).
func (s *badgerStore) initBadger() error {
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

// discard closes the database before start ran.
func (s *badgerStore) discard() { s.db.Close() }

// start loads the negentropy index, starts the resident-memory check and
// the writer.
func (s *badgerStore) start() {
	s.startNegIndex() // before the writer: see badger_negentropy.go
	s.startIDFilter() // before the writer too: see badger_query_id.go
	s.startResidentCheck()
	if s.w != nil {
		go s.w.run()
	}
}

// close drains the writer into a final sync, stops the goroutines and
// closes the database.
func (s *badgerStore) close() error {
	var werr, cerr error
	if s.w != nil {
		werr = s.w.stop()
	}
	s.neg.close()
	s.ids.close()
	if s.residentStop != nil {
		close(s.residentStop)
		<-s.residentDone
	}
	if s.wals != nil {
		s.wals.close()
	}
	// The backend's Close drops badger's error; close the DB directly.
	cerr = s.db.Close()
	switch {
	case werr != nil:
		return fmt.Errorf("store: final sync on close: %w", werr)
	case cerr != nil:
		return fmt.Errorf("store: close badger at %s: %w", s.dbDir, cerr)
	}
	return nil
}

func (s *badgerStore) readOnly() string { return s.ro }

func (s *badgerStore) collectors() []prometheus.Collector { return nil }

// write queues evt for the writer and waits for its group commit's sync;
// the writer counts it. Packing runs here, on the caller's goroutine, so
// that the one writer only writes.
func (s *badgerStore) write(ctx context.Context, kind opKind, evt *nostr.Event) error {
	o := &op{kind: kind, evt: evt}
	if kind != opDelete {
		o.evt, o.content, o.contentPrefix = splitContent(evt, !s.opts.noPack)
		o.prep = prepare(o.evt)
	}
	return s.w.submit(ctx, o)
}

// count is the eventstore library's count on the same database.
func (s *badgerStore) count(ctx context.Context, f nostr.Filter) (int64, error) {
	return s.backend.CountEvents(ctx, f)
}

// shared is false: a badger store has one process.
func (s *badgerStore) shared() bool { return false }

// follow refuses: a badger store has no other writers.
func (s *badgerStore) follow(context.Context, Follower) error {
	return errors.New("store: Follow needs the postgres backend")
}

// caughtUp has nothing to wait for: no other process writes a badger store.
func (s *badgerStore) caughtUp(context.Context) error { return nil }

// lead runs lead at once and for good: the one process leads.
func (s *badgerStore) lead(ctx context.Context, o LeadOptions, lead func(ctx context.Context)) error {
	o.OnChange(true)
	lead(ctx)
	o.OnChange(false)
	return nil
}

// repoLocker is nil: git's in-process locks suffice for one process.
func (s *badgerStore) repoLocker() *PGRepoLocker { return nil }

// baseLevelMemtables is the size of the first level below level 0 (badger's
// default is 10 MiB), as a multiple of the memtable size: 64 MiB with the
// default 16 MiB memtables. Badger sizes its levels from the last one down
// by LevelSizeMultiplier (10); level 0's tables, which span the whole key
// range, are merged with all of the base level, and each base-level table
// with the tables it overlaps one level down. With 10 MiB a million-event
// store (~190 MB of tables) has three levels below level 0 and its
// compactions rewrote 1,106 B per event; with 64 MiB it has two until
// ~640 MB of tables (~3.4 million events) and they rewrite 614 B
// (BenchmarkWritesAtScale at 1,000,000 events; issue 27 part 4). Fewer
// levels also means fewer tables for a read to look in. Tying it (and the
// table size, badger's 2 MiB at 16 MiB memtables) to the memtable keeps the
// tree's shape, and so what compactions rewrite per event, the same for a
// store k times smaller with memtables k times smaller: how the benchmark
// predicts a million events from a quarter of them.
const baseLevelMemtables = 4

// tableMemtableDiv sizes base-level tables: memtable / 8.
const tableMemtableDiv = 8

// levelZeroTables is how many level-0 tables (one per memtable flushed)
// wait before badger merges them into the base level, and levelZeroStall
// how many stall writes (badger: 5 and 15). Level 0's tables span the
// whole key range, so each of those merges rewrites all of the base level
// (64 MiB at a million events) for what level 0 brought: merging 10
// tables at a time instead of 5 halves that. Compactions at a million
// events: 615 -> 354 B per event, bytes written 1.57x -> 1.43x the JSON
// (BenchmarkWritesAtScale; issue 27 part 4). It costs no memory; a query
// iterator merges each level-0 table, up to 9 instead of 4 (the cost
// measured in docs/benchmarks.md).
const (
	levelZeroTables = 10
	levelZeroStall  = 20
)

// badgerOptions replaces badger's defaults with a budget sized for a relay:
// see the Options fields for the reasons.
func (s *badgerStore) badgerOptions(o badger.Options) badger.Options {
	const mb = 1 << 20
	o = o.WithLogger(badgerLogger{s.log.Named("badger")}).
		WithMemTableSize(int64(s.opts.MemTableMB) * mb).
		WithNumMemtables(s.opts.NumMemtables).
		WithBlockCacheSize(int64(s.opts.BlockCacheMB) * mb).
		WithIndexCacheSize(int64(s.opts.IndexCacheMB) * mb).
		WithNumCompactors(s.opts.NumCompactors).
		WithValueLogFileSize(int64(s.opts.ValueLogFileMB) * mb).
		WithValueThreshold(s.vthreshold).
		WithBaseLevelSize(baseLevelMemtables * int64(s.opts.MemTableMB) * mb).
		WithBaseTableSize(int64(s.opts.MemTableMB) * mb / tableMemtableDiv).
		WithNumLevelZeroTables(levelZeroTables).
		WithNumLevelZeroTablesStall(levelZeroStall).
		WithCompression(options.ZSTD).
		WithZSTDCompressionLevel(1).
		WithMetricsEnabled(s.opts.badgerMetrics).
		// The writer goroutine syncs once per batch (see badger_sync.go); badger's
		// SyncWrites would add one msync per transaction on top.
		WithSyncWrites(false).
		// Read-only: no LOCK pid file, memtable, value-log file or
		// compaction is written (badger_readonly.go).
		WithReadOnly(s.ro != "")
	if s.opts.badgerTweak != nil {
		o = s.opts.badgerTweak(o)
	}
	return o
}
