package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/config"
)

// The PostgreSQL connections of one instance (audit 2026-11b, F25: the
// eventstore backend's one pool of 80, shared by every part and held by a
// REQ for as long as its client took to read, let two instances pass a
// stock server's max_connections and fail every write). The pool is split
// so that no client can take what writes need, and everything is counted:
//
//   - 1 LISTEN connection of the live fan-out (Follow, its own);
//   - 1 for the leader lease (Lead);
//   - 1 session holding this instance's repository locks, and a sixteenth
//     of the pool (at least 1) to wait for a lock another instance holds
//     (pg_lock.go);
//   - a quarter (at least 3) reserved for event writes, side tables, the
//     server's own reads and the fan-out's loads;
//   - the rest for clients' stored queries (REQ, COUNT, NEG-OPEN), which
//     take a connection for one bounded page at a time (pg_query.go), at
//     most PostgresQueriesPerIP of them per client address.
const (
	// pgPoolCap bounds the derived pool: beyond it more connections only
	// add contention inside PostgreSQL.
	pgPoolCap = 64
	// pgToolHeadroom connections are left to the operator's psql, pg_dump
	// and the migration connection of an instance starting.
	pgToolHeadroom = 4
	// pgIdleTime closes a connection idle this long, so a burst's
	// connections go back to the server.
	pgIdleTime = 5 * time.Minute
)

// pgPoolSizes is one instance's split of its connections.
type pgPoolSizes struct {
	Total, Listen, Lease, LockSession, Locks, Reserved, Queries int
}

// splitPool divides total (at least config.MinPostgresPool) as the list
// above says.
func splitPool(total int) pgPoolSizes {
	p := pgPoolSizes{Total: total, Listen: 1, Lease: 1, LockSession: 1,
		Locks: max(1, total/16), Reserved: max(3, total/4)}
	p.Queries = total - p.Listen - p.Lease - p.LockSession - p.Locks - p.Reserved
	return p
}

// pgAllowance is how many connections the server lets this role open on
// this database: max_connections less the superuser's and reserved
// slots, or the database's or role's CONNECTION LIMIT when lower.
func pgAllowance(ctx context.Context, db *sql.DB) (int, error) {
	var allowed, dbLimit, roleLimit int
	var super bool
	err := db.QueryRowContext(ctx, `SELECT
		current_setting('max_connections')::int
			- current_setting('superuser_reserved_connections')::int
			- COALESCE(NULLIF(current_setting('reserved_connections', true), '')::int, 0),
		(SELECT datconnlimit FROM pg_database WHERE datname = current_database()),
		(SELECT rolconnlimit FROM pg_roles WHERE rolname = current_user),
		(SELECT rolsuper FROM pg_roles WHERE rolname = current_user)`).Scan(&allowed, &dbLimit, &roleLimit, &super)
	if err != nil {
		return 0, fmt.Errorf("read the server's connection limits: %w", err)
	}
	if dbLimit >= 0 {
		allowed = min(allowed, dbLimit)
	}
	if roleLimit >= 0 && !super {
		allowed = min(allowed, roleLimit)
	}
	return allowed, nil
}

// poolSize is the configured pool, or the derived one; warn says so when
// the instances together may open more than the server allows.
func poolSize(opts Options, allowed int) (size int, warn string, err error) {
	inst := max(opts.PostgresInstances, 1)
	if opts.PostgresPool > 0 {
		if inst*opts.PostgresPool > allowed-pgToolHeadroom {
			warn = fmt.Sprintf("store.postgres_pool %d x store.postgres_instances %d is more than the %d connections PostgreSQL allows (less %d for tools): a busy instance will be refused connections and its writes fail; lower the pool or raise max_connections",
				opts.PostgresPool, inst, allowed, pgToolHeadroom)
		}
		return opts.PostgresPool, warn, nil
	}
	size = min(pgPoolCap, (allowed-pgToolHeadroom)/inst)
	if size < config.MinPostgresPool {
		return 0, "", fmt.Errorf("store: PostgreSQL allows %d connections; shared by %d instances (store.postgres_instances) that leaves %d each, and grasp needs at least %d: raise max_connections (or the database's or role's CONNECTION LIMIT) or run fewer instances",
			allowed, inst, max(size, 0), config.MinPostgresPool)
	}
	return size, "", nil
}

// pgPools are the connection pools of pgPoolSizes. The LISTEN connection
// is Follow's own (lib/pq's Listener).
type pgPools struct {
	sizes    pgPoolSizes
	reserved *sqlx.DB
	queries  *sql.DB
	locks    *sql.DB
	session  *sql.DB // the lock session's one connection
	lease    *sql.DB
	// perClient bounds each client address's queries running at once.
	perClient *clientSlots
}

// openPools opens the pools (connections are made on first use) on the
// server url names; reserved is the one the event backend was built on.
func openPools(url string, sizes pgPoolSizes, perClient int, reserved *sqlx.DB) (*pgPools, error) {
	p := &pgPools{sizes: sizes, reserved: reserved, perClient: newClientSlots(perClient)}
	size(reserved.DB, sizes.Reserved)
	for _, o := range []struct {
		db *(*sql.DB)
		n  int
	}{{&p.queries, sizes.Queries}, {&p.locks, sizes.Locks}, {&p.session, sizes.LockSession}, {&p.lease, sizes.Lease}} {
		db, err := sql.Open("postgres", url)
		if err != nil {
			p.close()
			return nil, fmt.Errorf("store: open postgres: %w", err)
		}
		size(db, o.n)
		*o.db = db
	}
	return p, nil
}

func size(db *sql.DB, n int) {
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(pgIdleTime)
}

func (p *pgPools) close() error {
	var first error
	for _, db := range []*sql.DB{p.reserved.DB, p.queries, p.locks, p.session, p.lease} {
		if db == nil {
			continue
		}
		if err := db.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// forQuery is the pool a query runs on: a client's (ctx names its address,
// clientip.NewContext) takes a query connection once its address has a
// slot; the server's own reads take a reserved one.
func (p *pgPools) forQuery(ctx context.Context, client string, isClient bool) (*sql.DB, func(), error) {
	if !isClient {
		return p.reserved.DB, func() {}, nil
	}
	release, err := p.perClient.acquire(ctx, client)
	if err != nil {
		return nil, nil, err
	}
	return p.queries, release, nil
}

// clientSlots bounds how many queries each client address runs at once;
// the others wait (for as long as their context lasts), nothing is refused.
type clientSlots struct {
	max  int
	mu   sync.Mutex
	used map[string]int
	room chan struct{} // closed and replaced when a slot is released
}

func newClientSlots(n int) *clientSlots {
	return &clientSlots{max: max(n, 1), used: map[string]int{}, room: make(chan struct{})}
}

func (c *clientSlots) acquire(ctx context.Context, addr string) (func(), error) {
	for {
		c.mu.Lock()
		if c.used[addr] < c.max {
			c.used[addr]++
			c.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { c.release(addr) }) }, nil
		}
		room := c.room
		c.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// inUse is how many queries addr runs now.
func (c *clientSlots) inUse(addr string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used[addr]
}

func (c *clientSlots) release(addr string) {
	c.mu.Lock()
	if c.used[addr]--; c.used[addr] <= 0 {
		delete(c.used, addr)
	}
	close(c.room)
	c.room = make(chan struct{})
	c.mu.Unlock()
}

// pgPoolCollector reports each pool's connections at scrape time
// (grasp_store_pg_connections{pool,state}): what an operator checks
// against the sum rule, and what grasp-bench's PostgreSQL flood reads.
type pgPoolCollector struct {
	p    *pgPools
	conn *prometheus.Desc
	wait *prometheus.Desc
}

func newPGPoolCollector(p *pgPools) *pgPoolCollector {
	return &pgPoolCollector{p: p,
		conn: prometheus.NewDesc("grasp_store_pg_connections",
			"PostgreSQL connections of this instance by pool (queries: clients' stored queries; reserved: writes, side tables, the server's reads; locks and lock_session: repository locks; lease: the leader lease) and state (in_use, idle, max).",
			[]string{"pool", "state"}, nil),
		wait: prometheus.NewDesc("grasp_store_pg_wait_seconds_total",
			"Time spent waiting for a PostgreSQL connection of a pool, summed over every wait.",
			[]string{"pool"}, nil),
	}
}

func (c *pgPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.conn
	ch <- c.wait
}

func (c *pgPoolCollector) Collect(ch chan<- prometheus.Metric) {
	for name, db := range c.p.named() {
		st := db.Stats()
		ch <- prometheus.MustNewConstMetric(c.conn, prometheus.GaugeValue, float64(st.InUse), name, "in_use")
		ch <- prometheus.MustNewConstMetric(c.conn, prometheus.GaugeValue, float64(st.Idle), name, "idle")
		ch <- prometheus.MustNewConstMetric(c.conn, prometheus.GaugeValue, float64(st.MaxOpenConnections), name, "max")
		ch <- prometheus.MustNewConstMetric(c.wait, prometheus.CounterValue, st.WaitDuration.Seconds(), name)
	}
}

func (p *pgPools) named() map[string]*sql.DB {
	return map[string]*sql.DB{"queries": p.queries, "reserved": p.reserved.DB, "locks": p.locks,
		"lock_session": p.session, "lease": p.lease}
}
