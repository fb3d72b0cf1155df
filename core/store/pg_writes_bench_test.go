package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/proctree"
)

// pgBenchURLEnv names a PostgreSQL database the write benchmark runs on
// instead of the tests' throwaway cluster. That cluster runs without fsync
// and without full-page writes (pgtest), so its WAL lacks the page images a
// production server writes after each checkpoint: measure on a server
// configured as in production, e.g. a stock initdb, to see them.
const pgBenchURLEnv = "GRASP_PG_BENCH_URL"

// pgServerSample is what PostgreSQL did, summed over the server: its WAL
// (pg_stat_wal), its commits, and, read from /proc, the CPU time and bytes
// written of the postmaster and its children (only when this process may
// read them: same user or root).
type pgServerSample struct {
	walBytes, walFPI, walWrites, walSyncs int64
	commits                               int64
	cpu                                   time.Duration
	written                               int64
}

func samplePG(tb testing.TB, db *sql.DB, postmaster int) pgServerSample {
	tb.Helper()
	var s pgServerSample
	if err := db.QueryRow(`SELECT wal_bytes::bigint, wal_fpi, wal_write, wal_sync FROM pg_stat_wal`).
		Scan(&s.walBytes, &s.walFPI, &s.walWrites, &s.walSyncs); err != nil {
		tb.Fatalf("pg_stat_wal: %v", err)
	}
	// the statistics of this backend reach the shared ones at its
	// transaction's end; pg_stat_clear_snapshot reads them afresh
	if err := db.QueryRow(`SELECT pg_stat_clear_snapshot()::text, (SELECT sum(xact_commit)::bigint FROM pg_stat_database)`).
		Scan(new(string), &s.commits); err != nil {
		tb.Fatalf("pg_stat_database: %v", err)
	}
	s.cpu, s.written = proctree.Sample(postmaster)
	return s
}

// pgPostmaster is the pid of the server's postmaster, the parent of this
// connection's backend, or 0 when /proc does not show it.
func pgPostmaster(db *sql.DB) int {
	var backend int
	if err := db.QueryRow(`SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0
	}
	return proctree.Parent(backend)
}

// BenchmarkPGWritesPerEvent saves b.N events of the grasp-bench-shaped
// corpus through the store API from concurrent writers, as the relay's
// connections do, and reports what PostgreSQL wrote and spent per event
// (issue 27 part 1): WAL bytes and full-page images, WAL writes and
// flushes, commits, and, when /proc shows the server's processes, their
// CPU time and write_bytes. write_bytes is not what reaches the disk on
// every kernel: on Linux 6.18 with ext4's large folios, each write to a
// page cleaned by the last fdatasync counts the whole folio (up to 2 MiB),
// so a commit rewriting the WAL's last page counted hundreds of kilobytes
// (docs/benchmarks.md, issue 27 session 10); wal-bytes and the flushes are
// the server's own count. A
// checkpoint is forced before the run so that each run pays the full-page
// images a production server pays after every checkpoint. Ratios within
// one run, not wall time:
//
//	GRASP_PG_BENCH_URL=postgres://... go test -run '^$' -bench PGWritesPerEvent -benchtime 20000x ./core/store/
//
// path=single is the baseline in the same run: each event its own INSERT
// through the eventstore library, as the backend wrote them before group
// commit; path=group is the store's SaveEvent.
func BenchmarkPGWritesPerEvent(b *testing.B) {
	for _, path := range []string{"single", "group"} {
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("path=%s/writers=%d", path, writers), func(b *testing.B) {
				benchPGWrites(b, path == "single", writers)
			})
		}
	}
}

func benchPGWrites(b *testing.B, single bool, writers int) {
	url := os.Getenv(pgBenchURLEnv)
	if url != "" {
		url = freshBenchDB(b, url)
	} else {
		url = pgtest.DB(b)
	}
	st := openTest(b, Options{Backend: BackendPostgres, PostgresURL: url})
	db, err := sql.Open("postgres", url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	postmaster := pgPostmaster(db)
	c := newWritesCorpus()
	if _, err := db.Exec(`CHECKPOINT`); err != nil {
		b.Logf("no checkpoint (%v): full-page images are not counted from a checkpoint", err)
	}
	// the connections that created the database and its schema end,
	// with their writes, before the count starts
	waitPGQuiet(b, db, true)
	before := samplePG(b, db, postmaster)
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				save := st.Events().SaveEvent
				if single {
					save = st.pg().events.SaveEvent
				}
				if err := save(context.Background(), c.event(int(i))); err != nil {
					b.Errorf("save: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	// A backend's statistics reach pg_stat_wal and pg_stat_database by
	// the second, or when it exits: close the store and wait for its
	// connections to end.
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	waitPGQuiet(b, db, false)
	after := samplePG(b, db, postmaster)
	n := float64(b.N)
	b.ReportMetric(float64(after.walBytes-before.walBytes)/n, "wal-bytes/event")
	b.ReportMetric(float64(after.walFPI-before.walFPI)/n, "wal-fpi/event")
	b.ReportMetric(float64(after.walWrites-before.walWrites)/n, "wal-writes/event")
	b.ReportMetric(float64(after.walSyncs-before.walSyncs)/n, "wal-syncs/event")
	b.ReportMetric(float64(after.commits-before.commits)/n, "commits/event")
	if postmaster > 0 {
		b.ReportMetric(float64(after.written-before.written)/n, "pg-write_bytes/event")
		b.ReportMetric(float64(after.cpu-before.cpu)/n/1e3, "pg-cpu-µs/event")
	}
}

// waitPGQuiet waits (a minute at most) until no client is connected to
// the server but db's own connection and, with keepThisDB, the store's
// connections to db's database.
func waitPGQuiet(b *testing.B, db *sql.DB, keepThisDB bool) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var others int
		if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
			AND NOT ($1 AND datname = current_database())`, keepThisDB).Scan(&others); err != nil {
			b.Fatal(err)
		}
		if others == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freshBenchDB creates an empty database on the server of url, dropped
// when b ends, and returns its URL.
func freshBenchDB(b *testing.B, url string) string {
	b.Helper()
	db, err := sql.Open("postgres", url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("grasp_bench_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := db.Exec(`CREATE DATABASE ` + name + ` TEMPLATE template0`); err != nil {
		b.Fatalf("create the benchmark database: %v", err)
	}
	b.Cleanup(func() {
		d, err := sql.Open("postgres", url)
		if err != nil {
			return
		}
		defer d.Close()
		d.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`)
	})
	i := strings.LastIndexByte(url, '/')
	q := strings.IndexByte(url[i:], '?')
	if q < 0 {
		return url[:i+1] + name
	}
	return url[:i+1] + name + url[i+q:]
}
