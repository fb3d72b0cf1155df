// Package store owns grasp's durable state: the Nostr event store wired into
// khatru, the side tables that hold non-event state (purgatory entries,
// relay health, rejected and expired ids, placeholders) and GRASP-08's
// privacy record, on one of two backends chosen once, when New opens the
// store.
//
// # One layer, two backends
//
// The shared layer is the exported API and what is the same on both
// backends: store.go (Options, New, Close, Backup), events.go (the
// EventStore khatru gets: the checks every event passes, the limits a query
// runs with, the metrics), side.go (Side and its bucket and key checks),
// privacy.go (Privacy), maintain.go (Maintain), cluster.go (Follow, Lead,
// RepoLocker: what instances sharing a store need of each other),
// readonly.go and metrics.go. It holds one backend (backend.go) and never
// asks which one: New picks the implementation from Options.Backend and
// nothing afterwards branches on it.
//
//   - badger (badger_*.go, the default): everything in one badger database
//     under <data dir>/store, on disjoint key prefixes, so events and side
//     tables share one write-ahead log, one memtable and cache budget and
//     one sync per group commit (an fdatasync of the WAL, preceded by one
//     of the value log when the commit wrote a record there, or beside it
//     with Options.ParallelLogSync; badger_sync.go). A write is
//     acknowledged only after it is synced: an OK true from the relay
//     means the event survives kill -9 and a power cut. Event records and
//     packed contents go to badger's value log, written once; the tree
//     holds the index keys, which its compactions rewrite, on levels sized
//     for that (badger_store.go, issue 27 part 4). Concurrent writes are funnelled through a single
//     writer goroutine that applies a batch and syncs once for all of it
//     (strfry's design, badger_writer.go; the next batch is applied while
//     the previous one syncs, each caller answered after its own batch's
//     sync), because badger's own SyncWrites
//     issues one msync per transaction. Contents are packed with zstd or,
//     beyond the codec's 64 KiB, kept in a second record
//     (badger_large.go), so the relay's content limit is not bounded by the
//     codec. On a disk too full to open the database for writing it is
//     opened read-only: reads are served and every write is refused
//     (badger_readonly.go). It alone keeps the in-memory negentropy index
//     (badger_negentropy.go), and its process is the only one: it leads
//     alone and follows no one.
//   - PostgreSQL (pg_*.go, Backend "postgres"): events, side tables and
//     the record in PostgreSQL (its commit is durable on its own), shared
//     by every grasp instance on the database. The schema is versioned
//     (pg_schema.go) and migrated at start-up under an advisory lock,
//     side-table transactions serialise across instances (pg_side.go),
//     Follow fans stored events out between them (pg_feed.go), Lead and
//     RepoLocker are advisory locks (pg_lease.go, pg_lock.go). Its
//     connections are a bounded pool split so that clients' queries never
//     take what writes, locks and the leader lease need (pg_pool.go), and
//     reads are paged so that no connection waits on a client
//     (pg_query.go). No local database is opened then.
//
// The backends are file sets of this one package, not subpackages: the
// shared layer's exported types (Side, SideTx, Follower, LeadOptions,
// PGRepoLocker) are what both implement against, and the tests of each
// backend look at its insides (the writer's sync, the pools' connections)
// through the same unexported names.
//
// This package never decides whether an event is acceptable; it only refuses
// what it cannot store faithfully (malformed ids, fields beyond a backend's
// encoding). How many events a query returns is decided here, from the
// relay limits (max_limit, default_limit, negentropy_max_events).
package store
