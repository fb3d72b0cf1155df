package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	ebadger "github.com/fiatjaf/eventstore/badger"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

var nullLog = hclog.NewNullLogger()

// procField reads one numeric field from a /proc/self file.
func procField(tb testing.TB, file, field string) int64 {
	f, err := os.Open("/proc/self/" + file)
	if err != nil {
		tb.Fatalf("open /proc/self/%s: %v", file, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		v, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		if err != nil {
			tb.Fatalf("parse %s in /proc/self/%s: %v", field, file, err)
		}
		return v
	}
	tb.Fatalf("no %s in /proc/self/%s", field, file)
	return 0
}

var benchContent = strings.Repeat("diff --git a/x b/x\n+line\n", 30) // ~750 B

// benchEvent signs the i-th NIP-34-sized event (patch-like content, a few
// tags) of a benchmark corpus.
func benchEvent(tb testing.TB, sk string, i int) *nostr.Event {
	evt := &nostr.Event{
		Kind:      1617,
		CreatedAt: nostr.Timestamp(1_700_000_000 + i),
		Content:   benchContent,
		Tags: nostr.Tags{
			{"a", "30617:" + strings.Repeat("ab", 32) + ":grasp"},
			{"t", "root"},
			{"r", fmt.Sprintf("%040x", i)},
		},
	}
	if err := evt.Sign(sk); err != nil {
		tb.Fatal(err)
	}
	return evt
}

func benchEvents(tb testing.TB, n int) []*nostr.Event {
	sk := nostr.GeneratePrivateKey()
	evts := make([]*nostr.Event, n)
	for i := range evts {
		evts[i] = benchEvent(tb, sk, i)
	}
	return evts
}

type ingestResult struct {
	evPerSec   float64
	bytesPerEv float64
}

// ingest saves evts from the given number of goroutines and measures the
// rate and the bytes this process wrote to disk, including the memtable
// flush on close, per event.
func ingest(b *testing.B, save func(context.Context, *nostr.Event) error, closeFn func() error, evts []*nostr.Event, writers int) ingestResult {
	var next atomic.Int64
	var wg sync.WaitGroup
	wb0 := procField(b, "io", "write_bytes")
	start := time.Now()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(evts)) {
					return
				}
				if err := save(context.Background(), evts[i]); err != nil {
					b.Errorf("save: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := closeFn(); err != nil {
		b.Fatalf("close: %v", err)
	}
	written := procField(b, "io", "write_bytes") - wb0
	return ingestResult{
		evPerSec:   float64(len(evts)) / elapsed.Seconds(),
		bytesPerEv: float64(written) / float64(len(evts)),
	}
}

// BenchmarkDurableSave compares, for the same events and writer count:
// this store with group commit (sync), the same without fsync (nosync), and
// the baseline of the plain badger backend with badger's SyncWrites (one
// msync per transaction). Run with a fixed count, e.g.
//
//	go test -run '^$' -bench DurableSave -benchtime 2000x ./core/store/
func BenchmarkDurableSave(b *testing.B) {
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			b.StopTimer()
			evts := benchEvents(b, b.N)
			b.StartTimer()

			open := func(noSync bool) *Store {
				s, err := New(Options{Dir: b.TempDir(), UnsafeNoSync: noSync}, env.Env{})
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			s := open(false)
			group := ingest(b, s.Events().SaveEvent, s.Close, evts, writers)
			s = open(true)
			nosync := ingest(b, s.Events().SaveEvent, s.Close, evts, writers)

			plain := &ebadger.BadgerBackend{Path: b.TempDir(), BadgerOptionsModifier: func(o badger.Options) badger.Options {
				o = (&badgerStore{opts: Options{}.withDefaults(), log: nullLog, vthreshold: maxValueThreshold}).badgerOptions(o)
				return o.WithSyncWrites(true)
			}}
			if err := plain.Init(); err != nil {
				b.Fatal(err)
			}
			baseline := ingest(b, plain.SaveEvent, plain.DB.Close, evts, writers)

			b.ReportMetric(group.evPerSec, "sync-ev/s")
			b.ReportMetric(nosync.evPerSec, "nosync-ev/s")
			b.ReportMetric(baseline.evPerSec, "badgersync-ev/s")
			b.ReportMetric(group.evPerSec/baseline.evPerSec, "sync/badgersync")
			b.ReportMetric(group.bytesPerEv, "sync-B/ev")
			b.ReportMetric(nosync.bytesPerEv, "nosync-B/ev")
			b.ReportMetric(baseline.bytesPerEv, "badgersync-B/ev")
			b.ReportMetric(float64(procField(b, "status", "VmHWM"))/1024, "peakRSS-MiB")
		})
	}
}

// BenchmarkWriteAmplification reports bytes written per byte of event JSON
// for durable group-commit ingest (issue 15 part 3): grasp's layout before
// issue 15 part 3 (contents inline, records in the LSM tree: WAL, then L0
// table, then compactions) against today's (compressible contents packed,
// records of at least DefaultValueThreshold bytes written once to the value
// log); with 64 writers (large group commits) and 4 (small ones, more
// syncs), and with 4 with the value log and WALs synced at once
// (Options.ParallelLogSync).
//
// Each run ingests the same 4,000 events (~2 KB of JSON each, the content
// 1,200 bytes of patch-like text that zstd packs to about half, as it does
// grasp-bench's corpus).
//
//	go test -run '^$' -bench WriteAmplification -benchtime 1x ./core/store/
func BenchmarkWriteAmplification(b *testing.B) {
	evts := make([]*nostr.Event, 4000)
	sk := nostr.GeneratePrivateKey()
	rng := rand.New(rand.NewPCG(1, 2))
	jsonBytes := 0
	for i := range evts {
		evts[i] = benchEvent(b, sk, i)
		evts[i].Content = benchText(rng, 1200)
		if err := evts[i].Sign(sk); err != nil {
			b.Fatal(err)
		}
		jsonBytes += len(evts[i].String())
	}
	for _, c := range []struct {
		name    string
		opts    Options
		writers int
	}{
		{"before/writers=64", Options{noPack: true, ValueThreshold: maxValueThreshold}, 64},
		{"packed+vlog/writers=64", Options{}, 64},
		{"before/writers=4", Options{noPack: true, ValueThreshold: maxValueThreshold}, 4},
		{"packed+vlog/writers=4", Options{}, 4},
		// The value log and the WALs synced at once (issue 27 part 4).
		{"packed+vlog+parallel/writers=4", Options{ParallelLogSync: true}, 4},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.opts.Dir = b.TempDir()
			s, err := New(c.opts, env.Env{})
			if err != nil {
				b.Fatal(err)
			}
			var syncs atomic.Int64
			s.badger().w.syncFn = func(vlog bool) error { syncs.Add(1); return s.badger().syncDurable(vlog) }
			b.ResetTimer()
			r := ingest(b, s.Events().SaveEvent, s.Close, evts, c.writers)
			n := float64(len(evts))
			b.ReportMetric(r.bytesPerEv*n/float64(jsonBytes), "written/json")
			b.ReportMetric(r.bytesPerEv, "written-B/ev")
			b.ReportMetric(float64(jsonBytes)/n, "json-B/ev")
			b.ReportMetric(r.evPerSec, "ev/s")
			b.ReportMetric(n/float64(syncs.Load()), "ev/commit")
			// What stays after Close (the memtable flushed): value-log
			// files (records and packed contents, written once) and tables
			// (keys, pointers, inline records: written by the flush).
			b.ReportMetric(float64(sizeOf(b, c.opts.Dir, ".vlog"))/n, "vlog-B/ev")
			b.ReportMetric(float64(sizeOf(b, c.opts.Dir, ".sst"))/n, "tables-B/ev")
		})
	}
}

// sizeOf sums the sizes of the files of the store under dir whose names end
// in suffix.
func sizeOf(tb testing.TB, dir, suffix string) int64 {
	entries, err := os.ReadDir(filepath.Join(dir, "store"))
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			fi, err := e.Info()
			if err != nil {
				tb.Fatal(err)
			}
			n += fi.Size()
		}
	}
	return n
}

var benchWords = strings.Fields(`repo fetch commit tree blob ref head branch tag merge patch issue
status comment author relay event filter index store query sync push pull clone pack object
hash diff line file path name error ctx err nil return func type struct range len make append`)

// benchText is n bytes of patch-like text: diff lines of random words,
// numbers and short hashes.
func benchText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "+\t%s := %s.%s(%s, %d) // %08x\n", benchWords[rng.IntN(len(benchWords))],
			benchWords[rng.IntN(len(benchWords))], benchWords[rng.IntN(len(benchWords))],
			benchWords[rng.IntN(len(benchWords))], rng.IntN(10000), rng.Uint32())
	}
	return b.String()[:n]
}
