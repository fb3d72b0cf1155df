package gate

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/khatru"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

var (
	benchOnce   sync.Once
	benchFrames [][]byte
)

// benchEvents signs a fixed pool once; the bench relay stores nothing, so
// re-publishing the same events costs khatru the same work each time.
func benchEvents(b *testing.B) [][]byte {
	benchOnce.Do(func() {
		sk := nostr.GeneratePrivateKey()
		for i := 0; i < 2000; i++ {
			evt := signedEvent(b, sk, 1, strings.Repeat("grasp ", 40), 1_700_000_000+int64(i))
			evt.Tags = nil
			frame, _ := json.Marshal([]any{"EVENT", evt})
			benchFrames = append(benchFrames, frame)
		}
	})
	return benchFrames
}

func benchRelay() *khatru.Relay {
	rl := khatru.NewRelay()
	rl.Log = log.New(io.Discard, "", 0)
	rl.StoreEvent = append(rl.StoreEvent, func(context.Context, *nostr.Event) error { return nil })
	rl.QueryEvents = append(rl.QueryEvents, func(context.Context, nostr.Filter) (chan *nostr.Event, error) {
		ch := make(chan *nostr.Event)
		close(ch)
		return ch, nil
	})
	return rl
}

// ingest publishes n events over conns connections, pipelined with a
// bounded window, and returns the wall time until every OK arrived.
func ingest(b *testing.B, h http.Handler, n, conns int) time.Duration {
	srv := httptest.NewServer(h)
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	frames := benchEvents(b)
	clients := make([]*websocket.Conn, conns)
	for i := range clients {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatalf("dial: %v", err)
		}
		defer c.Close()
		clients[i] = c
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range clients {
		share := n / conns
		if i == 0 {
			share += n % conns
		}
		wg.Add(1)
		go func(c *websocket.Conn, share, offset int) {
			defer wg.Done()
			window := make(chan struct{}, 64)
			done := make(chan error, 1)
			go func() {
				for got := 0; got < share; got++ {
					c.SetReadDeadline(testwait.Deadline(b))
					_, msg, err := c.ReadMessage()
					if err != nil {
						done <- err
						return
					}
					if !strings.HasPrefix(string(msg), `["OK",`) || !strings.Contains(string(msg), ",true,") {
						got-- // not an OK for us; keep reading
						continue
					}
					<-window
				}
				done <- nil
			}()
			for k := 0; k < share; k++ {
				window <- struct{}{}
				if err := c.WriteMessage(websocket.TextMessage, frames[(offset+k)%len(frames)]); err != nil {
					b.Errorf("write: %v", err)
					return
				}
			}
			if err := <-done; err != nil {
				b.Errorf("read: %v", err)
			}
		}(c, share, i*7919)
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkIngestGateVsKhatru publishes b.N events to bare khatru and to
// gate+khatru in the same run, alternating three times to spread the noise
// of a shared machine, and reports throughput ratios (1.0 means the gate
// costs nothing; the relay target is >= 0.9). cpu-ratio compares process
// CPU time, which other load on the machine disturbs less than wall time.
func BenchmarkIngestGateVsKhatru(b *testing.B) {
	benchEvents(b)
	const conns, rounds = 4, 3
	n := max(b.N/rounds, 200)
	var bare, gated, bareCPU, gatedCPU time.Duration
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		c0 := cpuTime()
		bare += ingest(b, benchRelay(), n, conns)
		c1 := cpuTime()
		gated += ingest(b, New(benchRelay(), Options{}), n, conns)
		c2 := cpuTime()
		bareCPU += c1 - c0
		gatedCPU += c2 - c1
	}
	b.StopTimer()
	total := float64(n * rounds)
	b.ReportMetric(total/bare.Seconds(), "khatru-events/s")
	b.ReportMetric(total/gated.Seconds(), "gate-events/s")
	b.ReportMetric(bare.Seconds()/gated.Seconds(), "wall-ratio")
	b.ReportMetric(bareCPU.Seconds()/gatedCPU.Seconds(), "cpu-ratio")
	b.ReportMetric(float64(gatedCPU-bareCPU)/total/1e3, "gate-cpu-us/event")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScanEventFrame measures the per-frame validation pass.
func BenchmarkScanEventFrame(b *testing.B) {
	frame := benchEvents(b)[0]
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scanFrame(frame, maxFrameDepth); err != nil {
			b.Fatal(err)
		}
	}
}
