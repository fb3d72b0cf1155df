package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

// TestBackupWhileOpenRestoresEveryEvent: a dump taken while the store is
// open holds every event saved before it, restores into a new data dir
// whose store opens and takes new events, and OpenClosed refuses a store
// a server holds open.
func TestBackupWhileOpenRestoresEveryEvent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	var ids []string
	for i := range 50 {
		content := "event " + strings.Repeat("x", i)
		if i == 7 {
			content = strings.Repeat("large ", 20000) // the two-record form (badger_large.go)
		}
		evt := signed(t, testKey(i), 1, nostr.Timestamp(1700000000+i), content)
		mustSave(t, s.Events(), evt)
		ids = append(ids, evt.ID)
	}
	if err := s.Side().Put(context.Background(), "purgatory", "held", []byte("entry"), 0); err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	if err := s.Backup(&dump); err != nil {
		t.Fatal(err)
	}
	if c, err := OpenClosed(Options{Dir: s.opts.Dir}, env.Env{}); err == nil || !strings.Contains(err.Error(), "is the server running?") {
		t.Errorf("OpenClosed of an open store: %v", err)
		if c != nil {
			c.Close()
		}
	}

	dir := t.TempDir()
	if err := Restore(Options{Dir: dir}, env.Env{}, bytes.NewReader(dump.Bytes())); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, Options{Dir: dir})
	got := map[string]bool{}
	for _, e := range query(t, ctx, r.Events(), nostr.Filter{IDs: ids}) {
		got[e.ID] = true
		if !e.CheckID() {
			t.Errorf("restored event %s does not hash to its id", e.ID)
		}
	}
	if len(got) != len(ids) {
		t.Errorf("restored %d of %d events", len(got), len(ids))
	}
	if v, ok, err := r.Side().Get(context.Background(), "purgatory", "held"); err != nil || !ok || string(v) != "entry" {
		t.Errorf("restored side table: %q %v %v", v, ok, err)
	}
	later := signed(t, testKey(0), 1, 1800000000, "after the restore")
	mustSave(t, r.Events(), later)
	if n := len(query(t, ctx, r.Events(), nostr.Filter{Kinds: []int{1}, Limit: 500})); n != len(ids)+1 {
		t.Errorf("after one more save the restored store holds %d events, want %d", n, len(ids)+1)
	}

	// A second restore into the same, now non-empty, store refuses.
	if err := Restore(Options{Dir: dir}, env.Env{}, bytes.NewReader(dump.Bytes())); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore over a store: %v", err)
	}
}

// TestOpenClosedReadsAStoppedStore: with no server, the dump is read from
// the files and restores every event.
func TestOpenClosedReadsAStoppedStore(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	evt := signed(t, testKey(1), 1, 1700000000, "kept")
	mustSave(t, s.Events(), evt)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := OpenClosed(Options{Dir: dir}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	// While it is open for the backup, no server can open the store.
	if s2, err := New(Options{Dir: dir}, env.Env{}); err == nil {
		s2.Close()
		t.Error("a server opened the store during an offline backup")
	}
	var dump bytes.Buffer
	if err := c.Backup(&dump); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	to := t.TempDir()
	if err := Restore(Options{Dir: to}, env.Env{}, &dump); err != nil {
		t.Fatal(err)
	}
	r := openTest(t, Options{Dir: to})
	if got := query(t, context.Background(), r.Events(), nostr.Filter{IDs: []string{evt.ID}}); len(got) != 1 {
		t.Errorf("restored %d events, want 1", len(got))
	}
	if _, err := OpenClosed(Options{Dir: filepath.Join(t.TempDir(), "none")}, env.Env{}); err == nil || !strings.Contains(err.Error(), "no database") {
		t.Errorf("OpenClosed without a store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(to, "store", "MANIFEST")); err != nil {
		t.Errorf("restored store: %v", err)
	}
}
