package server_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// benchServer is one of our servers on the real clock for benchmarks.
type benchServer struct {
	srv *server.Server
	reg *metrics.Registry
	ws  string
	cfg config.Config
}

func startBenchServer(tb testing.TB, syncOn bool) *benchServer {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := config.Default()
	cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.Server.PublicURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg.Server.DataDir = tb.TempDir()
	cfg.Metrics.Enabled = false
	cfg.Sync.Enabled = syncOn
	cfg.Sync.BatchWindow = config.Duration(50 * time.Millisecond)
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	srv, reg, err := newServer(cfg, server.Build{Version: "bench"}, server.Extensions{}, env.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	serveUntilCleanup(tb, srv)
	return &benchServer{srv: srv, reg: reg, ws: cfg.RelayURL(), cfg: cfg}
}

func (s *benchServer) cloneURL(pk, d string) string {
	return s.cfg.Server.PublicURL + "/" + nip34.Npub(pk) + "/" + d + ".git"
}

// seedRepo stores an announcement of repo d listing every server, on each
// of them, without the pipeline (as a purgatory release would): the
// benchmarks measure event sync, not git.
func seedRepo(tb testing.TB, sk, d string, servers ...*benchServer) string {
	tb.Helper()
	pk, _ := nostr.GetPublicKey(sk)
	tags := nostr.Tags{{"d", d}}
	for _, s := range servers {
		tags = append(tags, nostr.Tag{"clone", s.cloneURL(pk, d)}, nostr.Tag{"relays", s.ws})
	}
	ann := &nostr.Event{Kind: 30617, Tags: tags, CreatedAt: nostr.Now()}
	if err := ann.Sign(sk); err != nil {
		tb.Fatal(err)
	}
	for _, s := range servers {
		if err := s.srv.Relay().Publish(context.Background(), ann); err != nil {
			tb.Fatal(err)
		}
	}
	return "30617:" + pk + ":" + d
}

// BenchmarkLivePropagation: an event published on one instance reaches a
// live subscriber of a second instance that syncs from it. Reported next
// to the baseline of the same event reaching a subscriber of the instance
// it was published to, measured in the same run (goal: p50 ≤ 200 ms,
// p99 ≤ 1 s). At most 300 events and 60 s per run.
func BenchmarkLivePropagation(b *testing.B) {
	peer := startBenchServer(b, false)
	sut := startBenchServer(b, true)
	sk := nostr.GeneratePrivateKey()
	addr := seedRepo(b, sk, "bench", peer, sut)
	testwait.For(b, "sync connected", func() bool {
		return relaySnapshot(sut.srv, peer.ws).Status == relaysync.Connected &&
			metricIn(b, sut.reg, "grasp_sync_pending_batches", "") == 0 && relaySnapshot(sut.srv, peer.ws).Filters >= 4
	})
	ctx := testwait.Context(b)
	pub, err := nostr.RelayConnect(ctx, peer.ws)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	watch := func(url string) (chan string, func()) {
		r, err := nostr.RelayConnect(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		now := nostr.Now()
		sub, err := r.Subscribe(ctx, nostr.Filters{{Kinds: []int{1}, Tags: nostr.TagMap{"a": {addr}}, Since: &now}})
		if err != nil {
			b.Fatal(err)
		}
		ids := make(chan string, 1024)
		go func() {
			for e := range sub.Events {
				ids <- e.ID
			}
		}()
		return ids, func() { sub.Unsub(); r.Close() }
	}
	direct, stopDirect := watch(peer.ws)
	defer stopDirect()
	synced, stopSynced := watch(sut.ws)
	defer stopSynced()

	n := min(b.N, 300)
	var lat, base []time.Duration
	deadline := time.Now().Add(60 * time.Second)
	b.ResetTimer()
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		evt := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"a", addr}}, Content: fmt.Sprintf("live %d", i)}
		evt.Sign(sk)
		start := time.Now()
		if err := pub.Publish(ctx, *evt); err != nil {
			b.Fatal(err)
		}
		gotDirect, gotSynced := false, false
		for !gotDirect || !gotSynced {
			select {
			case id := <-direct:
				if id == evt.ID && !gotDirect {
					gotDirect = true
					base = append(base, time.Since(start))
				}
			case id := <-synced:
				if id == evt.ID && !gotSynced {
					gotSynced = true
					lat = append(lat, time.Since(start))
				}
			case <-testwait.After(b):
				b.Fatalf("event %d did not arrive (direct %v, synced %v)", i, gotDirect, gotSynced)
			}
		}
	}
	b.StopTimer()
	p := func(d []time.Duration, q float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(lat, 0.5), "p50_ms")
	b.ReportMetric(p(lat, 0.99), "p99_ms")
	b.ReportMetric(p(base, 0.5), "direct_p50_ms")
	b.ReportMetric(p(base, 0.99), "direct_p99_ms")
	b.ReportMetric(p(lat, 0.5)/max(p(base, 0.5), 0.001), "p50_vs_direct")
	b.ReportMetric(float64(len(lat)), "events")
}

// discard is a catch-up Sink that keeps nothing: the full-REQ baseline.
type discard struct{}

func (discard) Deliver(context.Context, *nostr.Event) bool { return true }

// ingestSink delivers to a server's pipeline, as the connection layer does.
type ingestSink struct{ s *server.Server }

func (k ingestSink) Deliver(ctx context.Context, evt *nostr.Event) bool {
	ok, _ := k.s.Relay().Ingest(ctx, evt, policyMetaSync)
	return ok
}

// fill stores evts in s directly (as a restore would), in parallel so the
// store's group commit batches them.
func fill(tb testing.TB, s *server.Server, evts []*nostr.Event) {
	tb.Helper()
	var wg sync.WaitGroup
	ch := make(chan *nostr.Event)
	errs := make(chan error, 1)
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range ch {
				if err := s.Events().SaveEvent(context.Background(), e); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for _, e := range evts {
		ch <- e
	}
	close(ch)
	wg.Wait()
	select {
	case err := <-errs:
		tb.Fatal(err)
	default:
	}
}

// BenchmarkNegentropyCatchUp: two instances holding the same 50,000 events
// of a repository. Reported: bytes on the wire of a negentropy catch-up
// when in sync against a full REQ download of the same filter (goal < 1 %),
// and the time to converge through our pipeline when 1 % differ against
// that full download's time, all in the same run. Set -benchtime=1x.
func BenchmarkNegentropyCatchUp(b *testing.B) {
	const total, differ = 50_000, 500
	peer := startBenchServer(b, false)
	sut := startBenchServer(b, false)
	sk := nostr.GeneratePrivateKey()
	addr := seedRepo(b, sk, "bench", peer, sut)
	evts := make([]*nostr.Event, total)
	base := time.Now().Add(-30 * 24 * time.Hour)
	for i := range evts {
		e := &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(base.Add(time.Duration(i) * 30 * time.Second).Unix()),
			Tags: nostr.Tags{{"a", addr}}, Content: fmt.Sprintf("history %d", i)}
		e.Sign(sk)
		evts[i] = e
	}
	fill(b, peer.srv, evts)
	// the instance under test lacks every 100th event: 1 % differ
	var have []*nostr.Event
	for i, e := range evts {
		if i%(total/differ) != 0 {
			have = append(have, e)
		}
	}
	fill(b, sut.srv, have)
	client, err := catchup.New(catchup.Config{}, env.Env{})
	if err != nil {
		b.Fatal(err)
	}
	local := catchup.StoreLocal{Store: sut.srv.Events()}
	f := nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"a": {addr}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	b.ResetTimer()
	for i := 0; i < b.N && i < 1; i++ {
		full, err := client.CatchUp(ctx, peer.ws, f, catchup.StoreLocal{Store: emptyStore{}}, discard{}, catchup.Options{})
		if err != nil || full.Fetched != total {
			b.Fatalf("full REQ: %+v %v", full, err)
		}
		conv, err := client.CatchUp(ctx, peer.ws, f, local, ingestSink{sut.srv}, catchup.Options{Negentropy: true})
		if err != nil || conv.Delivered != differ {
			b.Fatalf("converge: %+v %v", conv, err)
		}
		inSync, err := client.CatchUp(ctx, peer.ws, f, local, ingestSink{sut.srv}, catchup.Options{Negentropy: true})
		if err != nil || inSync.Needed != 0 {
			b.Fatalf("in sync: %+v %v", inSync, err)
		}
		fullBytes := float64(full.BytesSent + full.BytesReceived)
		b.ReportMetric(float64(inSync.BytesSent+inSync.BytesReceived), "insync_bytes")
		b.ReportMetric(fullBytes, "fullreq_bytes")
		b.ReportMetric(100*float64(inSync.BytesSent+inSync.BytesReceived)/fullBytes, "insync_pct_of_full")
		b.ReportMetric(conv.Duration.Seconds(), "converge_1pct_s")
		b.ReportMetric(full.Duration.Seconds(), "fullreq_s")
		b.ReportMetric(conv.Duration.Seconds()/full.Duration.Seconds(), "converge_vs_fullreq")
	}
}

var policyMetaSync = policy.Meta{Source: policy.SourceSync, Remote: "bench"}

// emptyStore is a Local holding nothing.
type emptyStore struct{}

func (emptyStore) QueryEvents(context.Context, nostr.Filter) (chan *nostr.Event, error) {
	ch := make(chan *nostr.Event)
	close(ch)
	return ch, nil
}
