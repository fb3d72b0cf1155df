package plugins

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
)

// stockChain is the three-plugin stock accept chain of the benchmarks:
// a 100-key deny list, a 20-word spam filter and per-pubkey/IP rate limits
// high enough never to trigger.
func stockChain(tb testing.TB, pool int, clk clock.Clock) *Set {
	deny := make([]any, 100)
	for i := range deny {
		deny[i] = fmt.Sprintf("%064x", i+1)
	}
	words := []any{"casino", "airdrop", "free btc", "giveaway", "viagra", "crypto pump", "click here", "bonus", "lottery", "winner",
		"jackpot", "porn", "xxx", "loan", "forex", "binary options", "seo service", "followers", "likes", "presale"}
	s, err := NewSet(Options{Dir: "../scripts", PoolSize: pool, Clock: clk, Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Error}), Accept: []Spec{
		{Name: "pubkeys", File: "pubkey_lists.js", Config: map[string]any{"deny": deny}},
		{Name: "spam", File: "spam_words.js", Config: map[string]any{"words": words}},
		{Name: "ratelimit", File: "rate_limit.js", Config: map[string]any{"pubkey_per_minute": 1e12, "pubkey_burst": 1e12, "ip_per_minute": 1e12, "ip_burst": 1e12}},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// benchEvent is a NIP-34 issue with a realistic tag set.
func benchEvent(i int) *nostr.Event {
	return &nostr.Event{
		ID: fmt.Sprintf("%064x", i), PubKey: strings.Repeat("ab", 32), CreatedAt: nostr.Timestamp(1767323045 + i), Kind: 1621,
		Tags: nostr.Tags{
			{"a", "30617:" + strings.Repeat("ab", 32) + ":grasp"}, {"p", strings.Repeat("cd", 32)},
			{"subject", "push rejected when the state event arrives late"}, {"t", "bug"}, {"r", strings.Repeat("ef", 20)},
			{"alt", "a git issue"},
		},
		Content: "When I push right after publishing the state event the server answers with a rejection; retrying works. Steps to reproduce follow.",
		Sig:     strings.Repeat("00", 64),
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(float64(len(sorted)-1)*p)]
}

// BenchmarkAcceptChainStock measures the stock three-plugin chain per event
// on one goroutine and reports p50/p99 (target: ≤ 25 µs / ≤ 250 µs).
func BenchmarkAcceptChainStock(b *testing.B) {
	// A clock that never moves: this measures cost, and a wall-clock deadline
	// overrun on a starved machine would abort the run.
	s := stockChain(b, 1, clock.NewFake(time.Unix(1767323045, 0)))
	evts := make([]*nostr.Event, 1024)
	for i := range evts {
		evts[i] = benchEvent(i)
	}
	meta := policy.Meta{Source: policy.SourceClient, Remote: "203.0.113.7", ReceivedAt: time.Now()}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if v := s.Accept(ctx, evts[i%len(evts)], meta); v.Action != policy.Accept {
			b.Fatalf("stock chain rejected a clean event: %+v", v)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(percentile(lat, 0.50).Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(percentile(lat, 0.99).Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkIngestKhatruWithChain publishes the same signed events to a bare
// khatru relay (slicestore) with and without the stock chain in RejectEvent,
// alternating rounds in one run, and reports both rates and their ratio
// (target ≥ 0.8).
func BenchmarkIngestKhatruWithChain(b *testing.B) {
	const conns, perConn, rounds = 4, 250, 4
	sk := nostr.GeneratePrivateKey()
	evts := make([]*nostr.Event, conns*perConn)
	for i := range evts {
		e := benchEvent(i)
		e.CreatedAt = nostr.Now() - nostr.Timestamp(i)
		if err := e.Sign(sk); err != nil {
			b.Fatal(err)
		}
		evts[i] = e
	}
	chain := stockChain(b, 0, clock.New()) // real deadlines, as in production
	b.ResetTimer()
	var base, with time.Duration
	var failed int64
	for n := 0; n < b.N; n++ {
		for r := 0; r < rounds; r++ {
			// Alternate which relay goes first so warm-up and GC debt do not
			// favour one side.
			for _, withChain := range [][2]bool{{false, true}, {true, false}}[r%2] {
				if withChain {
					el, f := ingest(b, chain, evts, conns)
					with += el
					failed += f
				} else {
					el, _ := ingest(b, nil, evts, conns)
					base += el
				}
			}
		}
	}
	b.StopTimer()
	total := float64(len(evts) * rounds * b.N)
	b.ReportMetric(total/base.Seconds(), "bare-ev/s")
	b.ReportMetric(total/with.Seconds(), "chain-ev/s")
	b.ReportMetric(base.Seconds()/with.Seconds(), "ratio")
	// Plugin failures (deadline overruns under CPU starvation) are answered
	// "error: ..." and counted rather than aborting the run.
	b.ReportMetric(float64(failed), "plugin-failures")
}

func ingest(b *testing.B, chain *Set, evts []*nostr.Event, conns int) (time.Duration, int64) {
	b.Helper()
	relay := khatru.NewRelay()
	store := &slicestore.SliceStore{}
	if err := store.Init(); err != nil {
		b.Fatal(err)
	}
	relay.StoreEvent = append(relay.StoreEvent, store.SaveEvent)
	relay.QueryEvents = append(relay.QueryEvents, store.QueryEvents)
	if chain != nil {
		relay.RejectEvent = append(relay.RejectEvent, func(ctx context.Context, evt *nostr.Event) (bool, string) {
			v := chain.Accept(ctx, evt, policy.Meta{Source: policy.SourceClient, Remote: khatru.GetIP(ctx), ReceivedAt: time.Now()})
			return v.Action == policy.Reject, v.Msg
		})
	}
	srv := httptest.NewServer(relay)
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := make([]*nostr.Relay, conns)
	for i := range clients {
		c, err := nostr.RelayConnect(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	per := len(evts) / conns
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	errs := make(chan error, conns)
	for i, c := range clients {
		wg.Add(1)
		go func(c *nostr.Relay, part []*nostr.Event) {
			defer wg.Done()
			for _, e := range part {
				if err := c.Publish(ctx, *e); err != nil {
					if strings.Contains(err.Error(), "error: policy plugin") {
						failed.Add(1)
						continue
					}
					errs <- err
					return
				}
			}
		}(c, evts[i*per:(i+1)*per])
	}
	wg.Wait()
	el := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return el, failed.Load()
}
