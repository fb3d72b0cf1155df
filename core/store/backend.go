package store

import (
	"context"
	"io"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/prometheus/client_golang/prometheus"
)

// backend is one storage engine: badgerStore (badger_*.go) or pgStore
// (pg_*.go). New picks one and the shared layer (store.go, events.go,
// side.go, privacy.go, maintain.go, cluster.go) only calls it: it never
// asks which engine it has. The shared layer does what is the same on both
// (closed and read-only refusals, the limits a query runs with, the checks
// every event and side entry passes, the metrics both count); a backend
// does the rest, its own way.
type backend interface {
	// start runs the backend's goroutines, once New has registered the
	// metrics; discard closes what opening it opened, when New fails
	// before start. close stops the goroutines, makes what was written
	// durable and closes the database (after Store.closed was set).
	start()
	discard()
	close() error
	// readOnly says why the backend refuses writes ("": it takes them).
	readOnly() string
	// collectors are the backend's own metrics, beside the shared ones.
	collectors() []prometheus.Collector

	// checkEvent refuses what this engine cannot store faithfully; the
	// shared checks (validateEvent) ran before it.
	checkEvent(evt *nostr.Event) error
	// write saves, replaces or deletes a checked event and returns once it
	// is durable, counting it in the store's write metrics.
	write(ctx context.Context, kind opKind, evt *nostr.Event) error
	// query streams up to limit events matching f (its repeats dropped,
	// its limit set), newest first.
	query(ctx context.Context, f nostr.Filter, limit int) (chan *nostr.Event, error)
	count(ctx context.Context, f nostr.Filter) (int64, error)
	// negentropyStorage answers a NEG-OPEN filter with its (created_at,
	// id) pairs, from an index of the backend's own or a query of the
	// pairs alone; ok false: it cannot, the caller queries. ctx bounds it.
	negentropyStorage(ctx context.Context, f nostr.Filter, max int) (st negentropy.Storage, ok bool, err error)

	// sideUpdate and sideView run fn in one side-table transaction
	// (Side.Update, Side.view); ctx bounds its queries and the wait for
	// its sync.
	sideUpdate(ctx context.Context, fn func(tx SideTx) error) error
	sideView(ctx context.Context, fn func(tx SideTx) error) error
	// removeExpired deletes the side entries past their expiry and counts
	// the live ones.
	removeExpired(ctx context.Context) (live, removed int, err error)

	// putPrivacy and privacyEvents keep GRASP-08's per-event record
	// (Privacy); id is a checked event id.
	putPrivacy(ctx context.Context, id string, val []byte) error
	privacyEvents(ctx context.Context, ids []string) (map[string][]byte, error)

	// maintain is the backend's housekeeping after the side tables'
	// (Maintain).
	maintain(ctx context.Context) error
	// backup writes a dump of what the backend keeps locally (Backup).
	backup(w io.Writer) error

	// shared, follow, caughtUp, lead and repoLocker are what instances
	// sharing the store need of each other (cluster.go).
	shared() bool
	follow(ctx context.Context, f Follower) error
	caughtUp(ctx context.Context) error
	lead(ctx context.Context, o LeadOptions, lead func(ctx context.Context)) error
	repoLocker() *PGRepoLocker
}
