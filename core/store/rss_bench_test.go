package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ebadger "github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

var rssKey = nostr.GeneratePrivateKey()

const (
	rssModeEnv = "GRASP_STORE_RSS_MODE"
	rssDirEnv  = "GRASP_STORE_RSS_DIR"
	// rssEventsEnv overrides the corpus size (default 30,000).
	rssEventsEnv = "GRASP_STORE_RSS_EVENTS"
)

func rssEvents() int64 {
	if n, err := strconv.ParseInt(os.Getenv(rssEventsEnv), 10, 64); err == nil && n > 0 {
		return n
	}
	return 30_000
}

// rssChild ingests rssEvents() events from 4 goroutines, reads them back, and
// prints its peak and current RSS in KiB. mode "tuned" is this store with
// its defaults; "badger-defaults" is the plain backend with badger's.
func rssChild(mode, dir string) int {
	var (
		save  func(context.Context, *nostr.Event) error
		query func(context.Context, nostr.Filter) (chan *nostr.Event, error)
	)
	switch mode {
	case "tuned":
		s, err := New(Options{Dir: dir, UnsafeNoSync: true}, env.Env{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer s.Close()
		save, query = s.Events().SaveEvent, s.Events().QueryEvents
	case "badger-defaults":
		b := &ebadger.BadgerBackend{Path: dir}
		if err := b.Init(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer b.Close()
		save, query = b.SaveEvent, b.QueryEvents
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		return 2
	}
	// Events are built as they are saved, as a relay receives them, so
	// that RSS shows the store and not a corpus held in memory.
	// Sample anonymous memory: file-backed RSS (mmapped tables and WALs) is
	// page cache the kernel can reclaim, so it is reported apart.
	var peakAnon atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if a := procField(rssTB{}, "status", "RssAnon"); a > peakAnon.Load() {
				peakAnon.Store(a)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	total := rssEvents()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < total; i = next.Add(1) - 1 {
				evt := benchEvent(rssTB{}, rssKey, int(i))
				if err := save(context.Background(), evt); err != nil {
					fmt.Fprintln(os.Stderr, "save:", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Read everything back in pages, as sync peers and clients would.
	until := nostr.Timestamp(1<<32 - 1)
	for range total/500 + 1 {
		ch, err := query(context.Background(), nostr.Filter{Kinds: []int{1617}, Until: &until, Limit: 500})
		if err != nil {
			fmt.Fprintln(os.Stderr, "query:", err)
			return 2
		}
		for e := range ch {
			until = e.CreatedAt - 1
		}
	}
	close(stop)
	<-sampled
	fmt.Printf("%d %d %d\n", procField(rssTB{}, "status", "VmHWM"), peakAnon.Load(), procField(rssTB{}, "status", "RssFile"))
	return 0
}

// rssTB lets the child reuse the benchmark helpers outside a test.
type rssTB struct{ testing.TB }

func (rssTB) Fatal(args ...any) {
	fmt.Fprintln(os.Stderr, args...)
	os.Exit(2)
}

func (rssTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

// runRSSChild returns the child's peak RSS, peak anonymous RSS and final
// file-backed RSS, in KiB.
func runRSSChild(b *testing.B, mode string, env ...string) (peak, peakAnon, file float64) {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), rssModeEnv+"="+mode, rssDirEnv+"="+b.TempDir())
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("rss child %s: %v", mode, err)
	}
	f := strings.Fields(out.String())
	if len(f) != 3 {
		b.Fatalf("rss child %s printed %q", mode, out.String())
	}
	var v [3]float64
	for i := range v {
		var err error
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			b.Fatalf("rss child %s printed %q", mode, out.String())
		}
	}
	return v[0], v[1], v[2]
}

// BenchmarkIngestRSS compares the peak RSS of a process that ingests and
// reads back 30k (or $GRASP_STORE_RSS_EVENTS) NIP-34-sized events with this store's tuning against the
// plain backend with badger's defaults, and against the tuned store under
// GOMEMLIMIT=96MiB, each in its own process:
//
//	go test -run '^$' -bench IngestRSS -benchtime 1x ./core/store/
func BenchmarkIngestRSS(b *testing.B) {
	for range b.N {
		tPeak, tAnon, tFile := runRSSChild(b, "tuned")
		dPeak, dAnon, dFile := runRSSChild(b, "badger-defaults")
		// The backend allocates a 64 KiB encode buffer per save, so much of
		// the anonymous peak is garbage awaiting collection; a soft memory
		// limit (GOMEMLIMIT, for the binary to set) bounds it.
		_, lAnon, _ := runRSSChild(b, "tuned", "GOMEMLIMIT=96MiB")
		const mib = 1024
		b.ReportMetric(tPeak/mib, "tuned-peak-MiB")
		b.ReportMetric(tAnon/mib, "tuned-anon-MiB")
		b.ReportMetric(tFile/mib, "tuned-file-MiB")
		b.ReportMetric(dPeak/mib, "defaults-peak-MiB")
		b.ReportMetric(dAnon/mib, "defaults-anon-MiB")
		b.ReportMetric(dFile/mib, "defaults-file-MiB")
		b.ReportMetric(lAnon/mib, "tuned-memlimit96-anon-MiB")
		b.ReportMetric(dAnon/tAnon, "anon-ratio")
	}
}
