package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
)

// BenchmarkIngestDurableOK publishes b.N pre-signed events over several
// connections, each with a bounded window of unanswered EVENTs, to a bare
// khatru relay and to ours, both on badger with SyncWrites (an OK means the
// event is on disk), in the same run. It reports our throughput as a ratio
// of the bare relay's (goal >= 0.9), events/s and OK latency percentiles.
//
//	go test -run '^$' -bench IngestDurableOK -benchtime 3000x ./core/relay/
func BenchmarkIngestDurableOK(b *testing.B) {
	const conns, window = 4, 16
	keys := make([]key, 8)
	for i := range keys {
		keys[i] = newKey(b)
	}
	now := time.Now().Unix()
	evts := make([][]byte, b.N)
	for i := range evts {
		k := keys[i%len(keys)]
		e := k.event(b, 1621, now-int64(i%3600), nostr.Tags{
			{"a", "30617:" + keys[0].PK + ":bench-repo"}, {"p", keys[0].PK}, {"subject", fmt.Sprintf("issue %d", i)},
		}, fmt.Sprintf("benchmark issue body %d with a little text to look like a real one", i))
		evts[i], _ = json.Marshal([]any{"EVENT", e})
	}

	bareURL := startBareKhatru(b, true)
	db := openBadger(b, b.TempDir(), true)
	b.Cleanup(db.Close) // runs after the relay has stopped
	ours := startRelay(b, Options{Events: db})
	// The machine is shared: alternate rounds (and who goes first) so that
	// load drifting during the run hits both relays alike.
	const rounds = 4
	var bare, mine ingestResult
	b.ResetTimer()
	for r := range rounds {
		chunk := evts[r*len(evts)/rounds : (r+1)*len(evts)/rounds]
		if r%2 == 0 {
			bare.add(runIngest(b, bareURL, chunk, conns, window))
			mine.add(runIngest(b, ours.ws, chunk, conns, window))
		} else {
			mine.add(runIngest(b, ours.ws, chunk, conns, window))
			bare.add(runIngest(b, bareURL, chunk, conns, window))
		}
	}
	b.StopTimer()
	bare.finish()
	mine.finish()

	b.ReportMetric(mine.rate/bare.rate, "ratio")
	b.ReportMetric(mine.rate, "grasp_ev/s")
	b.ReportMetric(bare.rate, "bare_ev/s")
	b.ReportMetric(ms(mine.p50), "grasp_p50_ms")
	b.ReportMetric(ms(mine.p99), "grasp_p99_ms")
	b.ReportMetric(ms(bare.p50), "bare_p50_ms")
	b.ReportMetric(ms(bare.p99), "bare_p99_ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// startBareKhatru is the baseline: khatru as its README wires it, on the
// same store type (fsynced writes or not), served by a plain http.Server.
func startBareKhatru(b *testing.B, syncWrites bool) string {
	db := openBadger(b, b.TempDir(), syncWrites)
	rl := khatru.NewRelay()
	rl.Log = log.New(io.Discard, "", 0)
	rl.StoreEvent = append(rl.StoreEvent, db.SaveEvent)
	rl.QueryEvents = append(rl.QueryEvents, db.QueryEvents)
	rl.DeleteEvent = append(rl.DeleteEvent, db.DeleteEvent)
	rl.ReplaceEvent = append(rl.ReplaceEvent, db.ReplaceEvent)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: rl, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	b.Cleanup(func() {
		srv.Close()
		db.Close()
	})
	return "ws://" + ln.Addr().String()
}

type ingestResult struct {
	n        int
	elapsed  time.Duration
	lats     []time.Duration
	rate     float64
	p50, p99 time.Duration
}

func (r *ingestResult) add(o ingestResult) {
	r.n += o.n
	r.elapsed += o.elapsed
	r.lats = append(r.lats, o.lats...)
}

func (r *ingestResult) finish() {
	if r.elapsed > 0 {
		r.rate = float64(r.n) / r.elapsed.Seconds()
	}
	slices.Sort(r.lats)
	if len(r.lats) > 0 {
		r.p50 = r.lats[len(r.lats)/2]
		r.p99 = r.lats[len(r.lats)*99/100]
	}
}

func runIngest(b *testing.B, url string, evts [][]byte, conns, window int) ingestResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		lats = make([]time.Duration, 0, len(evts))
		wg   sync.WaitGroup
	)
	clients := make([]*websocket.Conn, conns)
	for i := range clients {
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			b.Fatalf("dial %s: %v", url, err)
		}
		c.SetReadLimit(1 << 20)
		clients[i] = c
	}
	start := time.Now()
	for ci, c := range clients {
		var mine [][]byte
		for i := ci; i < len(evts); i += conns {
			mine = append(mine, evts[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots := make(chan time.Time, window)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range mine {
					_, msg, err := c.Read(ctx)
					if err != nil {
						b.Errorf("read OK: %v", err)
						return
					}
					var ok []json.RawMessage
					if json.Unmarshal(msg, &ok) != nil || label(ok) != "OK" || string(ok[2]) != "true" {
						b.Errorf("unexpected answer %s", msg)
						return
					}
					sent := <-slots
					mu.Lock()
					lats = append(lats, time.Since(sent))
					mu.Unlock()
				}
			}()
			// OKs can come back out of order (khatru handles each frame on
			// its own goroutine); the window only bounds how many are open,
			// so each latency is measured from the oldest unanswered send.
			for _, frame := range mine {
				select {
				case slots <- time.Now():
				case <-done:
					return
				}
				if err := c.Write(ctx, websocket.MessageText, frame); err != nil {
					b.Errorf("write: %v", err)
					return
				}
			}
			<-done
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, c := range clients {
		c.Close(websocket.StatusNormalClosure, "")
	}
	return ingestResult{n: len(evts), elapsed: elapsed, lats: lats}
}

// BenchmarkVerifySignature is the per-event signature cost; compare
//
//	go test -run '^$' -bench VerifySignature ./core/relay/
//	go test -run '^$' -bench VerifySignature -tags libsecp256k1 ./core/relay/
func BenchmarkVerifySignature(b *testing.B) {
	e := newKey(b).event(b, 1, time.Now().Unix(), nostr.Tags{{"t", "bench"}}, "verify me")
	for b.Loop() {
		if ok, err := e.CheckSignature(); !ok || err != nil {
			b.Fatal("signature must verify")
		}
	}
}
