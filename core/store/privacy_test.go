package store

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/pgtest"
)

// Issue 23 part 1: GRASP-08's record is durable beside the events on both
// backends. Event records are kept by id and read back in a batch, ids
// without one are absent; repository records are read-modify-written
// atomically and scanned; the migration mark is kept; all of it survives
// the store being closed and opened again (a restart), and with
// PostgreSQL is seen by a second instance on the same database.
func TestPrivacy_RecordSurvivesRestartOnBothBackends(t *testing.T) {
	id := func(c byte) string { return strings.Repeat(string(c), 64) }
	write := func(t *testing.T, s *Store) {
		p := s.Privacy()
		ctx := context.Background()
		if err := p.PutEvent(ctx, id('a'), []byte(`["30617:x:vault"]`)); err != nil {
			t.Fatal(err)
		}
		// a record too big for badger's tree goes to the value log and
		// waits for a sync of its own
		if err := p.PutEvent(ctx, id('b'), bytes.Repeat([]byte("x"), 4096)); err != nil {
			t.Fatal(err)
		}
		if err := p.PutEvent(ctx, "not-an-id", []byte("x")); err == nil {
			t.Fatal("a record for a malformed id was accepted")
		}
		for i, want := range []string{"one", "two"} {
			err := p.UpdateRepo("30617:x:vault", func(old []byte, ok bool) ([]byte, bool, error) {
				if ok != (i > 0) || (i > 0 && string(old) != "one") {
					t.Errorf("update %d saw %q, %v", i, old, ok)
				}
				return []byte(want), true, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// fn declining to write leaves the record as it is
		if err := p.UpdateRepo("30617:x:vault", func([]byte, bool) ([]byte, bool, error) { return []byte("three"), false, nil }); err != nil {
			t.Fatal(err)
		}
		if err := p.SetMark("migrated", "1"); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, s *Store) {
		p := s.Privacy()
		got, err := p.Events(context.Background(), []string{id('a'), id('b'), id('c'), "bad"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || string(got[id('a')]) != `["30617:x:vault"]` || len(got[id('b')]) != 4096 {
			t.Fatalf("event records read back: %d of them, %q", len(got), got[id('a')])
		}
		repos := map[string]string{}
		if err := p.Repos(func(k string, v []byte) error { repos[k] = string(v); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(repos) != 1 || repos["30617:x:vault"] != "two" {
			t.Fatalf("repository records: %v", repos)
		}
		if v, ok, err := p.Repo("30617:x:vault"); err != nil || !ok || string(v) != "two" {
			t.Fatalf("Repo: %q %v %v", v, ok, err)
		}
		if m, err := p.Mark("migrated"); err != nil || m != "1" {
			t.Fatalf("mark %q %v", m, err)
		}
	}
	t.Run("badger", func(t *testing.T) {
		dir := t.TempDir()
		s, err := New(Options{Dir: dir}, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		write(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, openTest(t, Options{Dir: dir}))
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.DB(t)
		s, err := New(Options{Dir: t.TempDir(), Backend: BackendPostgres, PostgresURL: url}, env.Env{})
		if err != nil {
			t.Fatal(err)
		}
		write(t, s)
		// a second instance on the same database sees it while the first
		// still runs, and after it stopped
		check(t, openTest(t, Options{Dir: t.TempDir(), Backend: BackendPostgres, PostgresURL: url}))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, openTest(t, Options{Dir: t.TempDir(), Backend: BackendPostgres, PostgresURL: url}))
	})
}
