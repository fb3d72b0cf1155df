package server_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/pgtest"
)

// BenchmarkMultiInstance measures ingest and live fan-out with 1, 2 and 3
// instances on one PostgreSQL (issue 17 part 6): writers spread over the
// instances publish notes signed by the relay's key (always accepted, so
// the figure is the write path and the database, not the rules), each
// waiting for its OK; one subscriber per instance must receive every event.
// It reports events/s to a durable OK (ingest), events/s until the last
// subscriber has every event (fan-out), and the mean publish-to-delivery
// delay on subscribers of another instance than the writer's.
//
//	go test -run '^$' -bench MultiInstance -benchtime 2000x ./core/server/
//
// The cluster is internal/pgtest's (fsync off): the figures compare the
// instance counts with each other, not with a production database.
func BenchmarkMultiInstance(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) { benchMulti(b, n) })
	}
}

func benchMulti(b *testing.B, n int) {
	const writersPerInstance = 8
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	url := pgtest.DB(b)
	gitDir := b.TempDir()
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	var wss []string
	for i := range n {
		cfg := config.Default()
		cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", ports[i])
		cfg.Server.PublicURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		cfg.Server.DataDir = b.TempDir()
		cfg.Server.GitDir = gitDir
		cfg.Store.Backend = "postgres"
		cfg.Store.PostgresURL = url
		cfg.Relay.Pubkey = pk
		cfg.Metrics.Enabled = false
		cfg.Sync.Enabled = false
		if err := cfg.Validate(); err != nil {
			b.Fatal(err)
		}
		srv, _, err := newServer(cfg, server.Build{Version: "bench"}, server.Extensions{}, env.Env{})
		if err != nil {
			b.Fatal(err)
		}
		serveUntilCleanup(b, srv)
		wss = append(wss, "ws://"+cfg.Server.Listen)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	evts := make([]*nostr.Event, b.N)
	for i := range evts {
		evts[i] = &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: fmt.Sprintf("bench note %d", i)}
		if err := evts[i].Sign(sk); err != nil {
			b.Fatal(err)
		}
	}
	sentAt := make([]atomic.Int64, b.N)
	writerOf := make([]int, b.N) // instance each event is published through
	index := make(map[string]int, b.N)
	for i, e := range evts {
		index[e.ID] = i
		writerOf[i] = i % n
	}

	// one subscriber per instance, subscribed before anything is sent
	var (
		delivered   sync.WaitGroup
		crossDelay  atomic.Int64
		crossCount  atomic.Int64
		lastArrival atomic.Int64
	)
	for si, ws := range wss {
		r, err := nostr.RelayConnect(ctx, ws)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { r.Close() })
		sub, err := r.Subscribe(ctx, nostr.Filters{{Kinds: []int{1}, Authors: []string{pk}, Limit: 0, LimitZero: true}})
		if err != nil {
			b.Fatal(err)
		}
		<-sub.EndOfStoredEvents
		delivered.Add(1)
		go func() {
			defer delivered.Done()
			seen := make([]bool, b.N)
			got := 0
			for got < b.N {
				select {
				case e := <-sub.Events:
					i, ok := index[e.ID]
					if !ok || seen[i] {
						continue
					}
					seen[i] = true
					got++
					now := time.Now().UnixNano()
					if writerOf[i] != si {
						crossDelay.Add(now - sentAt[i].Load())
						crossCount.Add(1)
					}
					for {
						last := lastArrival.Load()
						if now <= last || lastArrival.CompareAndSwap(last, now) {
							break
						}
					}
				case <-ctx.Done():
					b.Errorf("subscriber on instance %d got %d of %d events", si, got, b.N)
					return
				}
			}
		}()
	}

	// writers: writersPerInstance connections per instance
	var writers sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for inst, ws := range wss {
		for w := range writersPerInstance {
			writers.Add(1)
			go func() {
				defer writers.Done()
				r, err := nostr.RelayConnect(ctx, ws)
				if err != nil {
					b.Error(err)
					cancel()
					return
				}
				defer r.Close()
				// events of this instance, split among its writers
				for i := inst + w*n; i < b.N; i += n * writersPerInstance {
					sentAt[i].Store(time.Now().UnixNano())
					if err := r.Publish(ctx, *evts[i]); err != nil {
						b.Errorf("publish through instance %d: %v", inst, err)
						cancel() // the subscribers would wait for it forever
						return
					}
				}
			}()
		}
	}
	writers.Wait()
	ingest := time.Since(start)
	delivered.Wait()
	fanout := time.Duration(lastArrival.Load() - start.UnixNano())
	b.StopTimer()
	b.ReportMetric(float64(b.N)/ingest.Seconds(), "ingest-events/s")
	b.ReportMetric(float64(b.N)/fanout.Seconds(), "fanout-events/s")
	if c := crossCount.Load(); c > 0 {
		b.ReportMetric(float64(crossDelay.Load())/float64(c)/1e6, "cross-instance-ms")
	}
}
