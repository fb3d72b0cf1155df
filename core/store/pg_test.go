package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// openPostgresTest opens a store on a fresh database of the shared test
// cluster (internal/pgtest).
func openPostgresTest(t *testing.T, opts Options) *Store {
	t.Helper()
	opts.Backend = BackendPostgres
	opts.PostgresURL = pgtest.DB(t)
	return openTest(t, opts)
}

func TestPostgresBackend(t *testing.T) {
	t.Run("R4 limits are deliberate", func(t *testing.T) {
		testDeliberateLimits(t, openPostgresTest(t, Options{Limits: config.Limits{MaxLimit: 50, DefaultLimit: 10, NegentropyMaxEvents: 120}}))
	})
	t.Run("queries match a brute-force matcher", func(t *testing.T) {
		testQueriesMatchBruteForce(t, openPostgresTest(t, Options{Limits: config.Limits{MaxLimit: 40, DefaultLimit: 15}}))
	})
	t.Run("concurrent identical events stored once", func(t *testing.T) {
		testConcurrentIdentical(t, openPostgresTest(t, Options{}))
	})
	t.Run("delete", func(t *testing.T) {
		testDelete(t, openPostgresTest(t, Options{}))
	})
	t.Run("replace keeps the newest", func(t *testing.T) {
		s := openPostgresTest(t, Options{})
		sk := testKey(5)
		pk, _ := nostr.GetPublicKey(sk)
		for _, ts := range []nostr.Timestamp{2000, 2002, 2001} {
			if err := s.Events().ReplaceEvent(context.Background(), signed(t, sk, 30617, ts, "repo", nostr.Tag{"d", "grasp"})); err != nil {
				t.Fatal(err)
			}
		}
		got := query(t, context.Background(), s.Events(), nostr.Filter{Kinds: []int{30617}, Authors: []string{pk}})
		if len(got) != 1 || got[0].CreatedAt != 2002 {
			t.Fatalf("got %d versions, want only created_at 2002", len(got))
		}
	})
	t.Run("backup leaves events and side tables to PostgreSQL", func(t *testing.T) {
		s := openPostgresTest(t, Options{})
		evt := signed(t, testKey(2), 1, 1000, "in postgres")
		mustSave(t, s.Events(), evt)
		if err := s.Side().Put(context.Background(), "health", "wss://relay.example", []byte("dead"), 0); err != nil {
			t.Fatal(err)
		}
		var dump bytes.Buffer
		if err := s.Backup(&dump); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := Restore(Options{Dir: dir}, env.Env{}, &dump); err != nil {
			t.Fatal(err)
		}
		r := openTest(t, Options{Dir: dir})
		if _, ok, err := r.Side().Get(context.Background(), "health", "wss://relay.example"); err != nil || ok {
			t.Errorf("the local dump holds a side-table entry of the postgres backend (%v, %v): pg_dump covers them", ok, err)
		}
		if got := query(t, context.Background(), r.Events(), nostr.Filter{IDs: []string{evt.ID}}); len(got) != 0 {
			t.Errorf("the local dump holds %d events of the postgres backend", len(got))
		}
	})
	t.Run("sync filters beyond the backend's default caps", func(t *testing.T) {
		s := openPostgresTest(t, Options{})
		e := signed(t, testKey(6), 1617, 1000, "patch", nostr.Tag{"a", "30617:x:y"})
		mustSave(t, s.Events(), e)
		kinds := []int{30617, 30618, 1617, 1618, 1619, 1621, 1622, 1630, 1631, 1632, 1633, 5}
		got := query(t, context.Background(), s.Events(), nostr.Filter{Kinds: kinds})
		if len(got) != 1 {
			t.Fatalf("a %d-kind filter returned %d events, want 1", len(kinds), len(got))
		}
	})
	t.Run("patches above 64 KiB are kept", func(t *testing.T) {
		s := openPostgresTest(t, Options{})
		e := signed(t, testKey(7), 1617, 1000, strings.Repeat("+", 200_000))
		mustSave(t, s.Events(), e)
		got := query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{e.ID}})
		if len(got) != 1 || got[0].Content != e.Content {
			t.Fatalf("200 KB patch did not round-trip")
		}
	})
}

// Two instances on one database see one set of side tables, and Update
// serialises read-modify-write across them (issue 17 part 1).
func TestPostgresSideTablesAreSharedBetweenInstances(t *testing.T) {
	url := pgtest.DB(t)
	a := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	b := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	if err := a.Side().Put(context.Background(), "purgatory", "id1", []byte("held"), 0); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.Side().Get(context.Background(), "purgatory", "id1"); !ok || err != nil || string(v) != "held" {
		t.Fatalf("instance B reads %q %v %v, want what A wrote", v, ok, err)
	}
	const each = 25
	incrementConcurrently(t, []*Side{a.Side(), b.Side(), a.Side(), b.Side()}, each)
	v, _, err := a.Side().Get(context.Background(), "ctr", "n")
	if err != nil || len(v) != 8 || binary.BigEndian.Uint64(v) != 4*each {
		t.Fatalf("counter = %v (%v), want %d: an increment was lost between instances", v, err, 4*each)
	}
}

// Migrations are versioned, applied once whatever the number of instances
// starting together, and a schema newer than the binary is refused.
func TestPostgresMigrationsAppliedOnceAtStartup(t *testing.T) {
	url := pgtest.DB(t)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := New(Options{Dir: t.TempDir(), Backend: BackendPostgres, PostgresURL: url}, env.Env{Metrics: prometheus.NewRegistry()})
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent start: %v", err)
		}
	}
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, top int
	if err := db.QueryRow(`SELECT count(*), max(version) FROM grasp_schema`).Scan(&n, &top); err != nil {
		t.Fatal(err)
	}
	if n != len(pgMigrations) || top != len(pgMigrations) {
		t.Fatalf("grasp_schema has %d rows up to %d, want each of %d migrations once", n, top, len(pgMigrations))
	}
	if _, err := db.Exec(`INSERT INTO grasp_schema (version) VALUES ($1)`, len(pgMigrations)+1); err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Dir: t.TempDir(), Backend: BackendPostgres, PostgresURL: url}, env.Env{})
	if err == nil || !strings.Contains(err.Error(), "upgrade grasp") {
		t.Fatalf("a newer schema was not refused: %v", err)
	}
}

// Maintain removes expired side entries from PostgreSQL and counts the rest.
func TestPostgresMaintainRemovesExpiredSideEntries(t *testing.T) {
	fc := clock.NewFake(epoch)
	reg := prometheus.NewRegistry()
	s := openTestEnv(t, Options{Backend: BackendPostgres, PostgresURL: pgtest.DB(t)}, env.Env{Clock: fc, Metrics: reg})
	for i := range 30 {
		if err := s.Side().Put(context.Background(), "placeholders", fmt.Sprintf("p%02d", i), []byte("x"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Side().Put(context.Background(), "placeholders", "keep", []byte("y"), time.Hour); err != nil {
		t.Fatal(err)
	}
	fc.Advance(2 * time.Minute)
	if err := s.Maintain(context.Background()); err != nil {
		t.Fatalf("maintain: %v", err)
	}
	var rows int
	if err := s.pg().pgDB().QueryRow(`SELECT count(*) FROM grasp_side`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Fatalf("%d side rows after Maintain, want the 1 live one", rows)
	}
	if got := counterValue(t, reg, "grasp_store_side_expired_removed_total", nil); got != 30 {
		t.Errorf("expired removed = %v, want 30", got)
	}
}

// The repository lock holds across instances: while A holds a repository,
// B waits; B gives up when its context ends; another repository is free
// (issue 17 part 3).
func TestPostgresRepoLockHoldsAcrossInstances(t *testing.T) {
	url := pgtest.DB(t)
	a := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url}).RepoLocker()
	b := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url}).RepoLocker()
	ctx := context.Background()
	unlockA, err := a.Lock(ctx, "npub1x/repo.git")
	if err != nil {
		t.Fatal(err)
	}
	if unlockOther, err := b.Lock(ctx, "npub1x/other.git"); err != nil {
		t.Fatalf("another repository is blocked: %v", err)
	} else {
		unlockOther()
	}
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.Lock(cctx, "npub1x/repo.git")
		gaveUp <- err
	}()
	got := make(chan func(), 1)
	go func() {
		unlock, err := b.Lock(ctx, "npub1x/repo.git")
		if err != nil {
			t.Errorf("second waiter: %v", err)
			got <- func() {}
			return
		}
		got <- unlock
	}()
	cancel()
	select {
	case err := <-gaveUp:
		if err == nil {
			t.Fatal("a cancelled waiter got a lock A holds")
		}
	case <-testwait.After(t):
		t.Fatal("a cancelled waiter kept waiting")
	}
	select {
	case <-got:
		t.Fatal("B locked a repository A holds")
	default:
	}
	unlockA()
	select {
	case unlock := <-got:
		unlock()
	case <-testwait.After(t):
		t.Fatal("B never got the lock A released")
	}
}
