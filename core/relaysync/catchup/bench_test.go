package catchup

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
)

var (
	benchOnce sync.Once
	benchEvts []*nostr.Event
	benchURL  string
)

// BenchmarkCatchUp50k: 50,000 events on a khatru relay with NIP-77 against a
// local set. It reports, each against the baseline of a full REQ download in
// the same run:
//   - insync_pct_wire: bytes on the wire of an in-sync negentropy run, as a
//     percentage of the full download's bytes (goal < 1);
//   - converge_1pct_ms and converge_vs_full: time to converge when 1% of the
//     events are missing locally, and that time as a fraction of the full
//     download's.
//
// Run: go test -run '^$' -bench CatchUp50k -benchtime 1x ./core/relaysync/catchup/
func BenchmarkCatchUp50k(b *testing.B) {
	benchOnce.Do(func() {
		benchEvts = corpus(b, 50_000, 100)
		benchURL = upstream(b, benchEvts, upstreamOpts{negentropy: true})
	})
	c := newClient(b, Config{}, env.Env{})
	ctx := context.Background()
	run := func(local *memStore, neg bool) (Result, time.Duration) {
		start := time.Now()
		res, err := c.CatchUp(ctx, benchURL, allKinds, local, local, Options{Negentropy: neg})
		if err != nil {
			b.Fatal(err)
		}
		return res, time.Since(start)
	}
	var fullBytes, insyncBytes, convergeBytes int64
	var fullTime, insyncTime, convergeTime time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		empty := newMem()
		b.StartTimer()
		full, ft := run(empty, false)
		if full.Delivered != len(benchEvts) {
			b.Fatalf("full download delivered %d", full.Delivered)
		}
		insync, it := run(empty, true)
		if insync.Needed != 0 {
			b.Fatalf("in-sync run needed %d", insync.Needed)
		}
		b.StopTimer()
		// Every 100th event missing: differences spread over the whole range,
		// the harder case for reconciliation than one recent hole.
		spread := newMem()
		for k, e := range benchEvts {
			if k%100 != 0 {
				spread.events[e.ID] = e
			}
		}
		b.StartTimer()
		conv, ct := run(spread, true)
		if conv.Delivered != len(benchEvts)/100 {
			b.Fatalf("1%% run delivered %d", conv.Delivered)
		}
		fullBytes += full.BytesSent + full.BytesReceived
		insyncBytes += insync.BytesSent + insync.BytesReceived
		convergeBytes += conv.BytesSent + conv.BytesReceived
		fullTime += ft
		insyncTime += it
		convergeTime += ct
	}
	n := float64(b.N)
	b.ReportMetric(float64(fullBytes)/n, "full_bytes")
	b.ReportMetric(float64(insyncBytes)/n, "insync_bytes")
	b.ReportMetric(100*float64(insyncBytes)/float64(fullBytes), "insync_pct_wire")
	b.ReportMetric(float64(convergeBytes)/n, "converge_1pct_bytes")
	b.ReportMetric(float64(fullTime.Milliseconds())/n, "full_ms")
	b.ReportMetric(float64(insyncTime.Milliseconds())/n, "insync_ms")
	b.ReportMetric(float64(convergeTime.Milliseconds())/n, "converge_1pct_ms")
	b.ReportMetric(float64(convergeTime)/float64(fullTime), "converge_vs_full")
}
