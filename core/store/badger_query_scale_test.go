package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

// scaleCorpus is a corpus shaped like grasp-bench's (repositories with
// patches, issues, comments and statuses by a pool of authors), made of
// unsigned events: the store does not verify signatures, so a store of
// hundreds of thousands of events fills in seconds.
type scaleCorpus struct {
	evts    []*nostr.Event
	repos   []string
	authors []string
}

func newScaleCorpus(n int, seed uint64) *scaleCorpus {
	rng := rand.New(rand.NewPCG(seed, 7))
	c := &scaleCorpus{}
	hex32 := func() string {
		var b [32]byte
		for i := range 4 {
			v := rng.Uint64()
			for j := range 8 {
				b[i*8+j] = byte(v >> (8 * j))
			}
		}
		return hex.EncodeToString(b[:])
	}
	for range max(1, n/500) {
		c.authors = append(c.authors, hex32())
	}
	kinds := []int{1111, 1111, 1111, 1617, 1617, 1621, 1630}
	for i := range n {
		e := &nostr.Event{ID: hex32(), Sig: strings.Repeat("ab", 64), CreatedAt: nostr.Timestamp(1_700_000_000 + i*30 + rng.IntN(30))}
		if i%1000 == 0 {
			e.Kind, e.PubKey = 30617, c.authors[rng.IntN(len(c.authors))]
			d := "repo-" + strconv.Itoa(i/1000)
			e.Tags = nostr.Tags{{"d", d}, {"name", d}}
			c.repos = append(c.repos, "30617:"+e.PubKey+":"+d)
		} else {
			e.Kind, e.PubKey = kinds[rng.IntN(len(kinds))], c.authors[rng.IntN(len(c.authors))]
			e.Tags = nostr.Tags{{"a", c.repos[len(c.repos)-1]}, {"p", c.authors[rng.IntN(len(c.authors))]}}
			if e.Kind != 1617 && e.Kind != 1621 {
				e.Tags = append(e.Tags, nostr.Tag{"e", hex32()})
			}
			e.Content = benchText(rng, 300+rng.IntN(1500))
		}
		c.evts = append(c.evts, e)
	}
	return c
}

// fill saves every event of c through the store API, from a few goroutines
// so that group commits form as they do under a relay's load.
func (c *scaleCorpus) fill(tb testing.TB, s *Store) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(c.evts) {
					return
				}
				if err := s.Events().SaveEvent(context.Background(), c.evts[i]); err != nil {
					tb.Errorf("save %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// querySets are the filters grasp-bench scale asks (cmd/grasp-bench/query.go).
func (c *scaleCorpus) filters(rng *rand.Rand) map[string]nostr.Filter {
	ids := make([]string, 5)
	for k := range ids {
		ids[k] = c.evts[rng.IntN(len(c.evts))].ID
	}
	return map[string]nostr.Filter{
		"ids": {IDs: ids},
		"#a":  {Kinds: []int{1617, 1621}, Tags: nostr.TagMap{"a": {c.repos[rng.IntN(len(c.repos))]}}, Limit: 100},
		"authors+kinds": {Authors: []string{c.evts[rng.IntN(len(c.evts))].PubKey},
			Kinds: []int{1111, 1621, 1617}, Limit: 100},
	}
}

// scaleSizes is the store sizes BenchmarkQueryAtScale fills, from
// GRASP_QUERY_SCALE (comma-separated), default 20,000 and 200,000.
func scaleSizes() []int {
	v := os.Getenv("GRASP_QUERY_SCALE")
	if v == "" {
		return []int{20_000, 200_000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(f)
		if err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// BenchmarkQueryAtScale fills stores of two sizes (GRASP_QUERY_SCALE) with
// the same kind of corpus and reports, per size and query kind (ids: five
// random ids; #a: a repository's patches and issues, limit 100;
// authors+kinds, limit 100), the time and allocations of one query run to
// its end, and the ratio of the largest size's to the smallest's: flat
// queries keep the ratio near 1 (issue 27 part 3).
//
//	go test -run '^$' -bench QueryAtScale -benchtime 2000x ./core/store/
func BenchmarkQueryAtScale(b *testing.B) {
	sizes := scaleSizes()
	costs := map[int]map[string]queryCost{}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			c := newScaleCorpus(n, 1)
			dir := b.TempDir()
			if keep := os.Getenv("GRASP_QUERY_KEEP"); keep != "" {
				dir = filepath.Join(keep, strconv.Itoa(n)) // for BenchmarkQueryDataDir
			}
			tune, memMB := writesTune(b, os.Getenv("GRASP_STORE_WRITES_TUNE")) // badger options to compare
			s, err := New(Options{Dir: dir, UnsafeNoSync: true, MemTableMB: memMB, badgerTweak: tune}, env.Env{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			c.fill(b, s)
			costs[n] = benchQueryKinds(b, s, c.filters, costs[sizes[0]])
		})
	}
}

// BenchmarkQueryDataDir runs the same queries on an existing grasp data
// directory (GRASP_QUERY_DIR; open a copy: badger writes to it), their
// values sampled from its records: how the queries cost on a store a
// grasp-bench scale run left, e.g. at a million events.
//
//	GRASP_QUERY_DIR=/tmp/copy go test -run '^$' -bench QueryDataDir -benchtime 500x -cpuprofile cpu.out ./core/store/
func BenchmarkQueryDataDir(b *testing.B) {
	dir := os.Getenv("GRASP_QUERY_DIR")
	if dir == "" {
		b.Skip("GRASP_QUERY_DIR names no data directory")
	}
	tune, memMB := writesTune(b, os.Getenv("GRASP_STORE_WRITES_TUNE")) // badger options to compare
	s, err := New(Options{Dir: dir, MemTableMB: memMB, badgerTweak: tune}, env.Env{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	time.Sleep(30 * time.Second) // the start-up loads (negentropy index, id filter)
	c := sampleDataDir(b, s)
	b.Logf("sampled %d events, %d repositories", len(c.evts), len(c.repos))
	if add, _ := strconv.Atoi(os.Getenv("GRASP_QUERY_ADD")); add > 0 {
		// a relay that keeps ingesting: the queries run while badger
		// flushes and compacts what was just written
		extra := newScaleCorpus(add, uint64(time.Now().UnixNano()))
		extra.fill(b, s)
		l0, levels := tableShape(s.badger().db)
		b.Logf("added %d events: %d level-0 tables, %d levels with tables", add, l0, levels)
	}
	benchQueryKinds(b, s, c.filters, nil)
}

// sampleDataDir reads the values to ask for from a store: the records of
// up to 20,000 random serials and the repositories announced.
func sampleDataDir(tb testing.TB, s *Store) *scaleCorpus {
	c := &scaleCorpus{}
	bs := s.badger()
	rng := rand.New(rand.NewPCG(3, 4))
	err := bs.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{keyRaw}})
		defer it.Close()
		last := uint32(0)
		it2 := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{keyRaw}, Reverse: true})
		it2.Seek([]byte{keyRaw, 0xff, 0xff, 0xff, 0xff})
		if it2.Valid() {
			last = binary.BigEndian.Uint32(it2.Item().Key()[1:])
		}
		it2.Close()
		for range 20_000 {
			it.Seek(rawKey(1 + rng.Uint32N(max(1, last))))
			if !it.Valid() {
				continue
			}
			err := it.Item().Value(func(v []byte) error {
				e := &nostr.Event{}
				if decodeRecord(v, e) == nil {
					c.evts = append(c.evts, e)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range query(tb, context.Background(), s.Events(), nostr.Filter{Kinds: []int{30617}, Limit: 5000}) {
		c.repos = append(c.repos, "30617:"+e.PubKey+":"+e.Tags.GetD())
	}
	if len(c.evts) == 0 || len(c.repos) == 0 {
		tb.Fatalf("the store holds %d events, %d repositories: nothing to ask", len(c.evts), len(c.repos))
	}
	return c
}

type queryCost struct{ ns, allocs float64 }

// benchQueryKinds runs each query kind as a sub-benchmark on s and
// reports its time, process CPU and allocations per query, and their
// ratio to small's (a smaller store's) when given.
func benchQueryKinds(b *testing.B, s *Store, filters func(*rand.Rand) map[string]nostr.Filter, small map[string]queryCost) map[string]queryCost {
	if os.Getenv("GRASP_QUERY_SETTLE") != "" {
		settle(b, s.badger().db)
	}
	l0, levels := tableShape(s.badger().db)
	b.Logf("%d level-0 tables, %d levels with tables", l0, levels)
	costs := map[string]queryCost{}
	for _, kind := range []string{"ids", "#a", "authors+kinds"} {
		b.Run(kind, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 5))
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := processCPU()
			b.ResetTimer()
			got := 0
			for range b.N {
				got += len(query(b, context.Background(), s.Events(), filters(rng)[kind]))
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(processCPU()-cpu0)/1e3/float64(b.N), "cpu-µs/query")
			b.ReportMetric(float64(got)/float64(b.N), "events/query")
			if kind == "ids" && got < b.N*5*9/10 {
				b.Fatalf("ids queries found %d of %d events", got, b.N*5)
			}
			cs := queryCost{ns: float64(b.Elapsed().Nanoseconds()) / float64(b.N), allocs: float64(ms1.Mallocs-ms0.Mallocs) / float64(b.N)}
			costs[kind] = cs
			b.ReportMetric(cs.allocs, "allocs/query")
			if sm, ok := small[kind]; ok {
				b.ReportMetric(cs.ns/sm.ns, "time-ratio")
				b.ReportMetric(cs.allocs/sm.allocs, "allocs-ratio")
			}
		})
	}
	return costs
}

// processCPU is this process's CPU time so far, in nanoseconds: a query's
// cost together with whatever badger compacts meanwhile, as grasp-bench
// measures a server's CPU per REQ.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// settle waits (at most five minutes) until badger has no compaction to
// do: every level's score below 1.
func settle(tb testing.TB, db *badger.DB) {
	start, cpu := time.Now(), processCPU()
	for range 300 {
		busy := false
		for _, l := range db.Levels() {
			busy = busy || l.Score >= 1
		}
		if !busy {
			time.Sleep(time.Second) // the last compaction's table swap
			tb.Logf("compactions settled after %s, %.1f s of CPU", time.Since(start).Round(time.Second), float64(processCPU()-cpu)/1e9)
			return
		}
		time.Sleep(time.Second)
	}
	tb.Logf("compactions still pending after five minutes")
}

// tableShape counts badger's level-0 tables and the levels holding tables.
func tableShape(db *badger.DB) (l0, levels int) {
	seen := map[int]bool{}
	for _, t := range db.Tables() {
		if t.Level == 0 {
			l0++
		}
		seen[t.Level] = true
	}
	return l0, len(seen)
}
