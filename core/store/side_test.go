package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/pgtest"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func scanAll(t *testing.T, sd *Side, bucket string) []string {
	t.Helper()
	var out []string
	err := sd.Scan(context.Background(), bucket, func(key string, val []byte, _ time.Time) error {
		out = append(out, key+"="+string(val))
		return nil
	})
	if err != nil {
		t.Fatalf("scan %s: %v", bucket, err)
	}
	return out
}

// opener opens a store on one backend; for postgres every call in one test
// opens the same database, so a reopen sees what was written before.
type opener func(t testing.TB, opts Options, e env.Env) *Store

// onBothBackends runs a conformance test against badger and PostgreSQL: the
// side tables must behave the same on either.
func onBothBackends(t *testing.T, test func(t *testing.T, open opener)) {
	t.Run("badger", func(t *testing.T) { test(t, openTestEnv) })
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.DB(t)
		test(t, func(t testing.TB, opts Options, e env.Env) *Store {
			opts.Backend, opts.PostgresURL = BackendPostgres, url
			return openTestEnv(t, opts, e)
		})
	})
}

func TestSidePutGetDeleteScan(t *testing.T) { onBothBackends(t, testSidePutGetDeleteScan) }

func testSidePutGetDeleteScan(t *testing.T, open opener) {
	sd := open(t, Options{}, env.Env{}).Side()
	for _, kv := range [][3]string{{"a", "2", "two"}, {"a", "1", "one"}, {"ab", "1", "other bucket"}, {"a", "3", ""}} {
		if err := sd.Put(context.Background(), kv[0], kv[1], []byte(kv[2]), 0); err != nil {
			t.Fatalf("put %v: %v", kv, err)
		}
	}
	val, ok, err := sd.Get(context.Background(), "a", "1")
	if err != nil || !ok || string(val) != "one" {
		t.Fatalf("get a/1 = %q, %v, %v", val, ok, err)
	}
	if _, ok, _ := sd.Get(context.Background(), "a", "missing"); ok {
		t.Fatalf("missing key found")
	}
	// Bucket "a" must not see bucket "ab", keys come in order.
	if got, want := scanAll(t, sd, "a"), []string{"1=one", "2=two", "3="}; !slices.Equal(got, want) {
		t.Fatalf("scan a = %v, want %v", got, want)
	}
	if err := sd.Delete(context.Background(), "a", "2"); err != nil {
		t.Fatal(err)
	}
	if err := sd.Delete(context.Background(), "a", "never-there"); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	if got, want := scanAll(t, sd, "a"), []string{"1=one", "3="}; !slices.Equal(got, want) {
		t.Fatalf("after delete scan a = %v, want %v", got, want)
	}
	stop := errors.New("stop")
	n := 0
	err = sd.Scan(context.Background(), "a", func(string, []byte, time.Time) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("scan stop: err %v after %d entries", err, n)
	}
}

func TestG01P1_SideEntriesExpireInvisiblyByTheStoreClock(t *testing.T) {
	onBothBackends(t, testSideExpiry)
}

func testSideExpiry(t *testing.T, open opener) {
	fc := clock.NewFake(epoch)
	// no resident-memory check: its 250 ms ticker would fire 126 million
	// times in the year the fake clock skips below (12 minutes under -race)
	sd := open(t, Options{ResidentFileMB: -1}, env.Env{Clock: fc}).Side()
	if err := sd.Put(context.Background(), "purgatory", "held", []byte("evt"), 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := sd.Put(context.Background(), "purgatory", "forever", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	var exp time.Time
	if err := sd.Scan(context.Background(), "purgatory", func(k string, _ []byte, e time.Time) error {
		if k == "held" {
			exp = e
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(epoch.Add(30 * time.Minute)) {
		t.Fatalf("expiry reported as %v, want %v", exp, epoch.Add(30*time.Minute))
	}
	fc.Advance(30*time.Minute - time.Nanosecond)
	if _, ok, _ := sd.Get(context.Background(), "purgatory", "held"); !ok {
		t.Fatalf("entry vanished before its ttl")
	}
	fc.Advance(time.Nanosecond)
	if _, ok, _ := sd.Get(context.Background(), "purgatory", "held"); ok {
		t.Fatalf("expired entry still visible to Get")
	}
	if got := scanAll(t, sd, "purgatory"); !slices.Equal(got, []string{"forever=x"}) {
		t.Fatalf("scan after expiry = %v", got)
	}
	err := sd.Update(context.Background(), func(tx SideTx) error {
		if _, ok, err := tx.Get("purgatory", "held"); ok || err != nil {
			return fmt.Errorf("expired entry visible in Update: %v %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fc.Advance(365 * 24 * time.Hour)
	if _, ok, _ := sd.Get(context.Background(), "purgatory", "forever"); !ok {
		t.Fatalf("ttl 0 entry expired")
	}
}

func TestSideRejectsBadInput(t *testing.T) { onBothBackends(t, testSideRejectsBadInput) }

func testSideRejectsBadInput(t *testing.T, open opener) {
	sd := open(t, Options{}, env.Env{}).Side()
	for name, put := range map[string]func() error{
		"empty bucket":  func() error { return sd.Put(context.Background(), "", "k", nil, 0) },
		"NUL in bucket": func() error { return sd.Put(context.Background(), "a\x00b", "k", nil, 0) },
		"long bucket":   func() error { return sd.Put(context.Background(), strings.Repeat("b", 256), "k", nil, 0) },
		"long key":      func() error { return sd.Put(context.Background(), "b", strings.Repeat("k", 5000), nil, 0) },
		"negative ttl":  func() error { return sd.Put(context.Background(), "b", "k", nil, -time.Second) },
		"huge value":    func() error { return sd.Put(context.Background(), "b", "k", make([]byte, maxSideValueLen+1), 0) },
		"scan bad": func() error {
			return sd.Scan(context.Background(), "", func(string, []byte, time.Time) error { return nil })
		},
		"get bad bucket": func() error { _, _, err := sd.Get(context.Background(), "", "k"); return err },
	} {
		if err := put(); err == nil || !strings.HasPrefix(err.Error(), "invalid: ") {
			t.Errorf("%s: got %v, want an \"invalid: \" error", name, err)
		}
	}
	if got := scanAll(t, sd, "b"); len(got) != 0 {
		t.Fatalf("bad input left entries: %v", got)
	}
}

func TestSideUpdateIsAtomic(t *testing.T) { onBothBackends(t, testSideUpdateIsAtomic) }

func testSideUpdateIsAtomic(t *testing.T, open opener) {
	sd := open(t, Options{}, env.Env{}).Side()
	if err := sd.Put(context.Background(), "health", "relay-a", []byte("up"), 0); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("abort")
	err := sd.Update(context.Background(), func(tx SideTx) error {
		if err := tx.Put("health", "relay-b", []byte("up"), 0); err != nil {
			return err
		}
		if err := tx.Delete("health", "relay-a"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update returned %v, want the fn's error", err)
	}
	if got := scanAll(t, sd, "health"); !slices.Equal(got, []string{"relay-a=up"}) {
		t.Fatalf("aborted update left %v", got)
	}
}

// Concurrent read-modify-write through Update must lose no increment.
func TestSideUpdateSerialisesReadModifyWrite(t *testing.T) {
	onBothBackends(t, testSideUpdateSerialises)
}

func testSideUpdateSerialises(t *testing.T, open opener) {
	sd := open(t, Options{}, env.Env{}).Side()
	const workers, each = 8, 20
	sides := make([]*Side, workers)
	for i := range sides {
		sides[i] = sd
	}
	incrementConcurrently(t, sides, each)
	v, _, err := sd.Get(context.Background(), "ctr", "n")
	if err != nil || binary.BigEndian.Uint64(v) != workers*each {
		t.Fatalf("counter = %v (%v), want %d", v, err, workers*each)
	}
}

func TestSideEntriesSurviveReopen(t *testing.T) { onBothBackends(t, testSideSurvivesReopen) }

func testSideSurvivesReopen(t *testing.T, open opener) {
	dir := t.TempDir()
	fc := clock.NewFake(epoch)
	s := open(t, Options{Dir: dir}, env.Env{Clock: fc})
	if err := s.Side().Put(context.Background(), "rejected", "id1", []byte("spam"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fc.Advance(59 * time.Minute) // downtime counts against the ttl
	sd := open(t, Options{Dir: dir}, env.Env{Clock: fc}).Side()
	if v, ok, err := sd.Get(context.Background(), "rejected", "id1"); !ok || err != nil || string(v) != "spam" {
		t.Fatalf("after reopen got %q %v %v", v, ok, err)
	}
	fc.Advance(time.Minute)
	if _, ok, _ := sd.Get(context.Background(), "rejected", "id1"); ok {
		t.Fatalf("entry outlived its ttl across a restart")
	}
}

func rawKeyExists(t *testing.T, s *Store, bucket, key string) bool {
	t.Helper()
	k, err := sideKey(bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	err = s.badger().db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestMaintainRemovesExpiredEntriesAndSetsGauges(t *testing.T) {
	fc := clock.NewFake(epoch)
	reg := prometheus.NewRegistry()
	s, err := New(Options{Dir: t.TempDir()}, env.Env{Clock: fc, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sd := s.Side()
	// More than one deletion chunk of short-lived entries.
	const short = expiryChunk + 234
	err = sd.Update(context.Background(), func(tx SideTx) error {
		for i := range short {
			if err := tx.Put("placeholders", fmt.Sprintf("p%05d", i), []byte("x"), time.Minute); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"keep", "renewed"} {
		if err := sd.Put(context.Background(), "placeholders", k, []byte("y"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	mustSave(t, s.Events(), signed(t, testKey(0), 1, 1000, "e"))
	fc.Advance(2 * time.Minute)
	if err := s.Maintain(context.Background()); err != nil {
		t.Fatalf("maintain: %v", err)
	}
	if rawKeyExists(t, s, "placeholders", "p00000") || rawKeyExists(t, s, "placeholders", fmt.Sprintf("p%05d", short-1)) {
		t.Fatalf("expired entries still on disk after Maintain")
	}
	if !rawKeyExists(t, s, "placeholders", "keep") {
		t.Fatalf("Maintain removed a live entry")
	}
	if got := counterValue(t, reg, "grasp_store_side_expired_removed_total", nil); got != short {
		t.Errorf("expired removed = %v, want %d", got, short)
	}
	if got := counterValue(t, reg, "grasp_store_side_entries", nil); got != 2 {
		t.Errorf("side entries gauge = %v, want 2", got)
	}
	if got := counterValue(t, reg, "grasp_store_size_bytes", map[string]string{"part": "wal"}); got <= 0 {
		t.Errorf("wal size gauge = %v, want > 0", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Maintain(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("maintain with a cancelled ctx: %v", err)
	}
}

// An entry renewed between Maintain's scan and its delete must survive.
func TestDeleteIfExpiredSparesRenewedEntries(t *testing.T) {
	fc := clock.NewFake(epoch)
	s := openTestEnv(t, Options{}, env.Env{Clock: fc})
	sd := s.Side()
	if err := sd.Put(context.Background(), "b", "k", []byte("old"), time.Minute); err != nil {
		t.Fatal(err)
	}
	k, _ := sideKey("b", "k")
	fc.Advance(2 * time.Minute)
	if err := sd.Put(context.Background(), "b", "k", []byte("new"), time.Hour); err != nil {
		t.Fatal(err)
	}
	n, err := s.badger().deleteIfExpired([][]byte{k}, fc.Now())
	if err != nil || n != 0 {
		t.Fatalf("deleteIfExpired = %d, %v; want 0 deletions", n, err)
	}
	if v, ok, _ := sd.Get(context.Background(), "b", "k"); !ok || string(v) != "new" {
		t.Fatalf("renewed entry lost: %q %v", v, ok)
	}
}

// A value big enough for badger's value log must make the batch sync the
// value log too, and come back intact after a reopen.
func TestBigSideValueSyncsTheValueLog(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	var sawVlog []bool
	s.badger().w.syncFn = func(vlog bool) error {
		sawVlog = append(sawVlog, vlog)
		return s.badger().syncDurable(vlog)
	}
	big := make([]byte, 2*maxValueThreshold/3)
	for i := range big {
		big[i] = byte(i)
	}
	if err := s.Side().Put(context.Background(), "blobs", "big", big, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Side().Put(context.Background(), "blobs", "small", []byte("s"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The last entry is Close's final sync, which always covers the value log.
	if len(sawVlog) != 3 || !sawVlog[0] || sawVlog[1] {
		t.Fatalf("value-log sync flags per batch = %v, want [true false true]", sawVlog)
	}
	sd := openTest(t, Options{Dir: dir}).Side()
	v, ok, err := sd.Get(context.Background(), "blobs", "big")
	if err != nil || !ok || !slices.Equal(v, big) {
		t.Fatalf("big value after reopen: ok=%v err=%v len=%d", ok, err, len(v))
	}
}

// With a 1 MiB memtable the WAL rotates many times; every rotated WAL is
// synced once after it stopped growing and forgotten once flushed.
func TestWALSyncerFollowsRotations(t *testing.T) {
	dir := t.TempDir()
	// Values kept in the tree (the largest threshold this memtable allows),
	// so that they fill the memtable.
	s, err := New(Options{Dir: dir, MemTableMB: 1, ValueThreshold: maxValueThreshold}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 16<<10)
	for i := range 300 { // ~5 MiB through a 1 MiB memtable
		if err := s.Side().Put(context.Background(), "fill", fmt.Sprintf("k%04d", i), val, 0); err != nil {
			t.Fatal(err)
		}
	}
	maxFid := 0
	for name := range s.badger().wals.wal.files {
		var fid int
		if _, err := fmt.Sscanf(name, "%d.mem", &fid); err == nil && fid > maxFid {
			maxFid = fid
		}
	}
	if maxFid < 3 {
		t.Fatalf("newest tracked WAL has fid %d; the memtable did not rotate", maxFid)
	}
	for name := range s.badger().wals.wal.sealed {
		if _, ok := s.badger().wals.wal.files[name]; !ok {
			t.Fatalf("sealed WAL %s is not tracked", name)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openTest(t, Options{Dir: dir, MemTableMB: 1})
	n := 0
	if err := s2.Side().Scan(context.Background(), "fill", func(string, []byte, time.Time) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 300 {
		t.Fatalf("after reopen found %d of 300 entries", n)
	}
}

// incrementConcurrently runs one goroutine per entry of sides, each adding
// 1 each times to the counter ctr/n in a read-modify-write Update.
func incrementConcurrently(t *testing.T, sides []*Side, each int) {
	t.Helper()
	var wg sync.WaitGroup
	for _, sd := range sides {
		wg.Go(func() {
			for range each {
				err := sd.Update(context.Background(), func(tx SideTx) error {
					v, _, err := tx.Get("ctr", "n")
					if err != nil {
						return err
					}
					var n uint64
					if len(v) == 8 {
						n = binary.BigEndian.Uint64(v)
					}
					return tx.Put("ctr", "n", binary.BigEndian.AppendUint64(nil, n+1), 0)
				})
				if err != nil {
					t.Errorf("increment: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
