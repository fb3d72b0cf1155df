package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// The pool is derived from what the server allows and the instance count
// (the sum rule), and split so that clients' queries never take the
// connections writes, locks and the lease need (F25).
func TestPostgresPoolSizeAndSplit(t *testing.T) {
	for _, c := range []struct {
		pool, instances, allowed int
		want                     int
		warn, fail               bool
	}{
		{0, 2, 97, 46, false, false},   // a stock server (100 less 3 for superusers), two instances
		{0, 1, 397, 64, false, false},  // capped
		{0, 4, 97, 23, false, false},   // four instances share it
		{0, 10, 97, 0, false, true},    // 9 each is too few: refused with the reason
		{30, 2, 97, 30, false, false},  // configured, within the rule
		{50, 2, 97, 50, true, false},   // configured beyond the rule: warned
		{0, 2, 36, 16, false, false},   // a database CONNECTION LIMIT of 36
		{10, 1, 14, 10, false, false},  // the smallest pool
		{0, 1, 13, 0, false, true},     // below it
		{64, 3, 400, 64, false, false}, // 192 of 400
	} {
		got, warn, err := poolSize(Options{PostgresPool: c.pool, PostgresInstances: c.instances}, c.allowed)
		if c.fail != (err != nil) || (err == nil && got != c.want) || c.warn != (warn != "") {
			t.Errorf("pool %d, %d instances, %d allowed: got %d, warn %q, err %v; want %d (warn %v, fail %v)",
				c.pool, c.instances, c.allowed, got, warn, err, c.want, c.warn, c.fail)
		}
		if err != nil && !strings.Contains(err.Error(), "raise max_connections") {
			t.Errorf("the refusal does not say what to do: %v", err)
		}
	}
	for total := config.MinPostgresPool; total <= 200; total++ {
		p := splitPool(total)
		if p.Listen+p.Lease+p.LockSession+p.Locks+p.Reserved+p.Queries != total {
			t.Fatalf("split of %d does not add up: %+v", total, p)
		}
		if p.Queries < 3 || p.Reserved < 3 || p.Locks < 1 {
			t.Fatalf("split of %d leaves a share too small: %+v", total, p)
		}
	}
}

// pgTestEvents stores n events of kind 1 whose contents of size bytes
// make a query span several pages.
func pgTestEvents(t *testing.T, s *Store, n, size int) []*nostr.Event {
	t.Helper()
	var out []*nostr.Event
	for i := range n {
		e := signed(t, testKey(i), 1, nostr.Timestamp(1000+i/3), strings.Repeat(string(rune('a'+i%26)), size))
		mustSave(t, s.Events(), e)
		out = append(out, e)
	}
	return out
}

// A client's query that waits for its reader holds no PostgreSQL
// connection between pages, and a page is bounded in bytes; the events
// then come in order, all of them, as one query would give them (F25).
func TestAbuse_F25_QueryHoldsNoConnectionWhileItsReaderWaits(t *testing.T) {
	s := openPostgresTest(t, Options{PostgresPool: 10, Limits: config.Limits{MaxLimit: 500, DefaultLimit: 500}})
	evs := pgTestEvents(t, s, 60, 20<<10) // 1.2 MB: five pages of 256 KiB
	ctx, cancel := context.WithCancel(clientip.NewContext(context.Background(), "203.0.113.7"))
	defer cancel()
	ch, err := s.Events().QueryEvents(ctx, nostr.Filter{Kinds: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	first := <-ch
	testwait.For(t, "the query's connection to go back to the pool while its reader waits", func() bool {
		return s.pg().pools.queries.Stats().InUse == 0
	})
	got := []*nostr.Event{first}
	for e := range ch {
		got = append(got, e)
	}
	if len(got) != len(evs) {
		t.Fatalf("got %d events, want %d", len(got), len(evs))
	}
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		if a.CreatedAt < b.CreatedAt || (a.CreatedAt == b.CreatedAt && a.ID >= b.ID) {
			t.Fatalf("events %d and %d out of order (created_at %d/%d)", i-1, i, a.CreatedAt, b.CreatedAt)
		}
	}
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e.ID] {
			t.Fatalf("event %s came twice across pages", e.ID)
		}
		seen[e.ID] = true
	}
	// a limit inside a page, and one across pages
	for _, limit := range []int{7, 23} {
		if n := len(query(t, clientip.NewContext(context.Background(), "x"), s.Events(), nostr.Filter{Kinds: []int{1}, Limit: limit})); n != limit {
			t.Errorf("limit %d: got %d", limit, n)
		}
	}
}

// blockEventReads takes the event table's ACCESS EXCLUSIVE lock in an open
// transaction: every query of it then waits in the server, each on its
// own connection, until release.
func blockEventReads(t *testing.T, url string) (db *sql.DB, release func()) {
	t.Helper()
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`LOCK TABLE event IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			tx.Rollback()
		}
	}
	t.Cleanup(func() { release(); db.Close() })
	return db, release
}

// waitingOnEvents counts the sessions waiting for the event table's lock.
func waitingOnEvents(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_locks WHERE relation = 'event'::regclass AND NOT granted`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// One client address runs at most postgres_queries_per_ip queries at
// once, the other addresses' queries go on meanwhile, and all the
// clients together take at most the query share of the pool: writes to
// the side tables and repository locks still get connections (F25).
func TestAbuse_F25_QueriesPerAddressAndInTotal(t *testing.T) {
	url := pgtest.DB(t)
	s := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url, PostgresPool: 10, PostgresQueriesPerIP: 2})
	sizes := s.pg().pools.sizes
	if sizes.Queries != 3 {
		t.Fatalf("a pool of 10 gives %d query connections, want 3", sizes.Queries)
	}
	pgTestEvents(t, s, 3, 10)
	db, release := blockEventReads(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	results := make(chan error, 16)
	run := func(addr string) {
		go func() {
			ch, err := s.Events().QueryEvents(clientip.NewContext(ctx, addr), nostr.Filter{Kinds: []int{1}})
			if err == nil {
				for range ch {
				}
			}
			results <- err
		}()
	}
	for range 5 {
		run("203.0.113.7")
	}
	testwait.For(t, "two queries of one address to reach the server", func() bool { return waitingOnEvents(t, db) == 2 })
	run("198.51.100.9") // another client is not behind the first one's queue
	testwait.For(t, "another address's query to reach the server", func() bool { return waitingOnEvents(t, db) == 3 })
	if n := s.pg().pools.perClient.inUse("203.0.113.7"); n != 2 {
		t.Fatalf("the first address runs %d queries, want its 2", n)
	}
	// The query share is full: a third address waits for a connection,
	// and what writes need is still there.
	run("192.0.2.1")
	testwait.For(t, "the third address to wait for a query connection", func() bool {
		return s.pg().pools.queries.Stats().WaitCount > 0
	})
	if n := waitingOnEvents(t, db); n != sizes.Queries {
		t.Fatalf("%d queries reached the server, want the query share of %d", n, sizes.Queries)
	}
	if err := s.Side().Put(context.Background(), "health", "wss://relay.example", []byte("ok"), 0); err != nil {
		t.Fatalf("a side-table write while clients' queries fill their share: %v", err)
	}
	unlock, err := s.RepoLocker().Lock(ctx, "npub1x/repo.git")
	if err != nil {
		t.Fatalf("a repository lock while clients' queries fill their share: %v", err)
	}
	unlock()
	release()
	for range 7 {
		select {
		case err := <-results:
			if err != nil {
				t.Fatalf("a query failed once the table was free: %v", err)
			}
		case <-testwait.After(t):
			t.Fatal("queries did not finish once the table was free")
		}
	}
}

// Every lock no other instance holds is taken on the one lock session:
// twenty repositories locked at once cost one connection, and a lock
// another instance holds is waited for on the lock pool (F25).
func TestAbuse_F25_RepositoryLocksShareOneSession(t *testing.T) {
	url := pgtest.DB(t)
	a := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	b := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	ctx := context.Background()
	var unlocks []func()
	for i := range 20 {
		unlock, err := a.RepoLocker().Lock(ctx, fmt.Sprintf("npub1x/r%d.git", i))
		if err != nil {
			t.Fatal(err)
		}
		unlocks = append(unlocks, unlock)
	}
	if st, lk := a.pg().pools.session.Stats(), a.pg().pools.locks.Stats(); st.OpenConnections != 1 || lk.OpenConnections != 0 {
		t.Fatalf("20 locks hold %d session and %d lock-pool connections, want 1 and 0", st.OpenConnections, lk.OpenConnections)
	}
	got := make(chan func(), 1)
	go func() {
		unlock, err := b.RepoLocker().Lock(ctx, "npub1x/r3.git")
		if err != nil {
			t.Error(err)
			unlock = func() {}
		}
		got <- unlock
	}()
	testwait.For(t, "B to wait for the lock A holds on a lock-pool connection", func() bool {
		return b.pg().pools.locks.Stats().InUse == 1
	})
	select {
	case <-got:
		t.Fatal("B took a lock A holds")
	default:
	}
	for _, u := range unlocks {
		u()
	}
	select {
	case unlock := <-got:
		unlock()
	case <-testwait.After(t):
		t.Fatal("B never got the lock A released")
	}
	// released on the session: A takes them again
	for i := range 20 {
		unlock, err := a.RepoLocker().Lock(ctx, fmt.Sprintf("npub1x/r%d.git", i))
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
}
