//go:build postgres

// The postgres backend tests start a throwaway PostgreSQL server (initdb and
// pg_ctl on PATH) that listens on a Unix socket only. Run them with
//
//	go test -tags postgres ./core/store/
package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// startPostgres initialises and starts a private cluster and returns its
// connection string. initdb refuses to run as root, so as root the server
// runs as the "postgres" system user.
func startPostgres(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "grasp-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(base, uid, gid); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = base
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	data := filepath.Join(base, "data")
	run("initdb", "-D", data, "-A", "trust", "-U", "grasp", "--no-sync")
	run("pg_ctl", "-D", data, "-w", "-l", filepath.Join(base, "log"),
		"-o", fmt.Sprintf("-c listen_addresses='' -k %s", base), "start")
	t.Cleanup(func() { run("pg_ctl", "-D", data, "-w", "-m", "immediate", "stop") })
	return fmt.Sprintf("host=%s user=grasp dbname=postgres sslmode=disable", base)
}

func openPostgresTest(t *testing.T, url string, opts Options) *Store {
	t.Helper()
	opts.Backend = BackendPostgres
	opts.PostgresURL = url
	s := openTest(t, opts)
	t.Cleanup(func() {
		// Each subtest starts from an empty table.
		if _, err := s.pg.DB.Exec("TRUNCATE event"); err != nil {
			t.Errorf("truncate: %v", err)
		}
	})
	return s
}

func TestPostgresBackend(t *testing.T) {
	url := startPostgres(t)
	t.Run("R4 limits are deliberate", func(t *testing.T) {
		testDeliberateLimits(t, openPostgresTest(t, url, Options{Limits: config.Limits{MaxLimit: 50, DefaultLimit: 10, NegentropyMaxEvents: 120}}))
	})
	t.Run("queries match a brute-force matcher", func(t *testing.T) {
		testQueriesMatchBruteForce(t, openPostgresTest(t, url, Options{Limits: config.Limits{MaxLimit: 40, DefaultLimit: 15}}))
	})
	t.Run("concurrent identical events stored once", func(t *testing.T) {
		testConcurrentIdentical(t, openPostgresTest(t, url, Options{}))
	})
	t.Run("delete", func(t *testing.T) {
		testDelete(t, openPostgresTest(t, url, Options{}))
	})
	t.Run("replace keeps the newest", func(t *testing.T) {
		s := openPostgresTest(t, url, Options{})
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
	t.Run("backup holds the side tables, the events stay in PostgreSQL", func(t *testing.T) {
		s := openPostgresTest(t, url, Options{})
		evt := signed(t, testKey(2), 1, 1000, "in postgres")
		mustSave(t, s.Events(), evt)
		if err := s.Side().Put("health", "wss://relay.example", []byte("dead"), 0); err != nil {
			t.Fatal(err)
		}
		var dump bytes.Buffer
		if err := s.Backup(&dump, nil); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := Restore(Options{Dir: dir}, env.Env{}, &dump); err != nil {
			t.Fatal(err)
		}
		r := openTest(t, Options{Dir: dir})
		if v, ok, err := r.Side().Get("health", "wss://relay.example"); err != nil || !ok || string(v) != "dead" {
			t.Errorf("restored side table: %q %v %v", v, ok, err)
		}
		if got := query(t, context.Background(), r.Events(), nostr.Filter{IDs: []string{evt.ID}}); len(got) != 0 {
			t.Errorf("the local dump holds %d events of the postgres backend", len(got))
		}
	})
	t.Run("sync filters beyond the backend's default caps", func(t *testing.T) {
		s := openPostgresTest(t, url, Options{})
		e := signed(t, testKey(6), 1617, 1000, "patch", nostr.Tag{"a", "30617:x:y"})
		mustSave(t, s.Events(), e)
		kinds := []int{30617, 30618, 1617, 1618, 1619, 1621, 1622, 1630, 1631, 1632, 1633, 5}
		got := query(t, context.Background(), s.Events(), nostr.Filter{Kinds: kinds})
		if len(got) != 1 {
			t.Fatalf("a %d-kind filter returned %d events, want 1", len(kinds), len(got))
		}
	})
	t.Run("patches above 64 KiB are kept", func(t *testing.T) {
		s := openPostgresTest(t, url, Options{})
		e := signed(t, testKey(7), 1617, 1000, strings.Repeat("+", 200_000))
		mustSave(t, s.Events(), e)
		got := query(t, context.Background(), s.Events(), nostr.Filter{IDs: []string{e.ID}})
		if len(got) != 1 || got[0].Content != e.Content {
			t.Fatalf("200 KB patch did not round-trip")
		}
		if s.Notifier() == nil {
			t.Fatalf("postgres store has no Notifier")
		}
	})
	t.Run("side tables stay local and durable", func(t *testing.T) {
		s := openPostgresTest(t, url, Options{})
		if err := s.Side().Put("health", "wss://r", []byte("ok"), 0); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := s.Side().Get("health", "wss://r"); !ok || err != nil || string(v) != "ok" {
			t.Fatalf("side get: %q %v %v", v, ok, err)
		}
	})
}
