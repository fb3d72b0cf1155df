package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/core/store"
)

// BenchmarkIngestWithHeld ingests the same kind of batch (announcements of
// new repositories from fresh keys, their states and an issue each: all
// held, as on a busy server) on a server holding nothing and on one
// holding 10,000 announcements (the audit's flood, F13), and reports the
// ratio of the two times (x-empty; goal about 1.0: ingest must not slow
// down as purgatory grows). Before purgatory was indexed the audit measured
// 4.27.
//
//	go test -run '^$' -bench IngestWithHeld -benchtime 3x ./core/server/
func BenchmarkIngestWithHeld(b *testing.B) {
	const held, batch = 10000, 100
	empty := startHeldBench(b)
	full := startHeldBench(b)
	fillHeld(b, full, held)
	var tEmpty, tFull time.Duration
	for i := 0; i < b.N; i++ {
		be, bf := heldBatch(b, empty, batch), heldBatch(b, full, batch)
		tEmpty += ingestAll(b, empty, be)
		tFull += ingestAll(b, full, bf)
	}
	b.ReportMetric(float64(tFull)/float64(tEmpty), "x-empty")
	b.ReportMetric(float64(tEmpty.Microseconds())/float64(b.N*3*batch), "us/event-empty")
	b.ReportMetric(float64(tFull.Microseconds())/float64(b.N*3*batch), "us/event-10k-held")
}

func startHeldBench(b *testing.B) *benchServer {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := config.Default()
	cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	cfg.Server.PublicURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg.Server.DataDir = b.TempDir()
	cfg.Metrics.Enabled = false
	cfg.Sync.Enabled = false
	unboundedHeld(&cfg)
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	// fsync is a constant of every write, not what grows with purgatory:
	// left out, the ratio shows the write path's own cost.
	reg := metrics.New("bench", "")
	e := env.Env{Metrics: reg.Registerer()}
	st, err := store.New(store.Options{Dir: cfg.Server.DataDir, Limits: cfg.Relay.Limits, UnsafeNoSync: true}, e.Named("store"))
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Options{Config: cfg, Build: server.Build{Version: "bench"}, Metrics: reg, Store: st}, e)
	if err != nil {
		b.Fatal(err)
	}
	serveUntilCleanup(b, srv)
	return &benchServer{srv: srv, ws: cfg.RelayURL(), cfg: cfg}
}

// fillHeld holds n announcements of distinct repositories by distinct keys
// directly in purgatory (no bare repositories: only purgatory grows).
func fillHeld(b *testing.B, s *benchServer, n int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 32 {
				sk := nostr.GeneratePrivateKey()
				pk, _ := nostr.GetPublicKey(sk)
				d := fmt.Sprintf("flood-%d", i)
				ann := &nostr.Event{Kind: 30617, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"d", d},
					{"clone", s.cloneURL(pk, d)}, {"relays", s.ws}}}
				if err := ann.Sign(sk); err != nil {
					errs <- err
					return
				}
				if err := s.srv.Purgatory().Hold(context.Background(), purgatory.Entry{Event: ann, Repo: nip34.RepoRef{Pubkey: pk, Identifier: d}}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if got := s.srv.Purgatory().Len(); got != n {
		b.Fatalf("holding %d, want %d", got, n)
	}
}

// heldBatch signs, for n fresh keys, an announcement of a new repository
// listing s, a state for it (its objects are not here) and an issue on it.
func heldBatch(b *testing.B, s *benchServer, n int) []*nostr.Event {
	b.Helper()
	var out []*nostr.Event
	sign := func(sk string, kind int, tags nostr.Tags) {
		evt := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: tags, Content: "x"}
		if err := evt.Sign(sk); err != nil {
			b.Fatal(err)
		}
		out = append(out, evt)
	}
	for i := 0; i < n; i++ {
		sk := nostr.GeneratePrivateKey()
		pk, _ := nostr.GetPublicKey(sk)
		var oid [20]byte
		_, _ = rand.Read(oid[:])
		d := "new-" + pk[:12]
		sign(sk, 30617, nostr.Tags{{"d", d}, {"clone", s.cloneURL(pk, d)}, {"relays", s.ws}})
		sign(sk, 30618, nostr.Tags{{"d", d}, {"refs/heads/main", hex.EncodeToString(oid[:])}, {"HEAD", "ref: refs/heads/main"}})
		sign(sk, 1621, nostr.Tags{{"a", "30617:" + pk + ":" + d}, {"subject", "issue"}})
	}
	return out
}

func ingestAll(b *testing.B, s *benchServer, evs []*nostr.Event) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, evt := range evs {
		ok, msg := s.srv.Relay().Ingest(ctx, evt, policy.Meta{Source: policy.SourceClient, Remote: "127.0.0.1"})
		if !ok || !strings.HasPrefix(msg, "purgatory") {
			b.Fatalf("kind %d: OK %v %q, want held", evt.Kind, ok, msg)
		}
	}
	return time.Since(start)
}
