package negindex

import (
	"math/rand"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// BenchmarkMissingOnePercent is a whole NIP-77 session over the index at
// 200,000 events with the client lacking 1 % of them, every round: the
// server's side (Select and each Reconcile) is timed apart from the
// client's. 317 ms of server time per session before the running sums
// (fingerprint.go), 61 ms after, on the shared 2-core machine.
//
//	go test -run '^$' -bench MissingOnePercent -benchtime 3x ./core/negindex/
func BenchmarkMissingOnePercent(b *testing.B) {
	const n = 200_000
	r := rand.New(rand.NewSource(1))
	ix := New(nil)
	events := make([]Event, n)
	for i := range events {
		e := &events[i]
		r.Read(e.ID[:])
		e.CreatedAt = uint32(1_700_000_000 + r.Intn(n*10))
		e.Kind = 1111
	}
	ix.Load(events)
	snap, _, _ := ix.Select(nostr.Filter{}, n)
	client := vector.New()
	held := 0
	for _, it := range snap.Range(0, snap.Size()) {
		if r.Intn(100) != 0 {
			client.Insert(it.Timestamp, it.ID)
			held++
		}
	}
	client.Seal()
	b.ResetTimer()
	var server time.Duration
	rounds := 0
	for b.Loop() {
		cneg := negentropy.New(client, 60_000)
		msg := cneg.Start()
		t := time.Now()
		s, ok, err := ix.Select(nostr.Filter{}, n)
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
		sneg := negentropy.New(s, 60_000)
		server += time.Since(t)
		missing := make(chan int)
		go func() {
			for range cneg.Haves {
			}
		}()
		go func() {
			k := 0
			for range cneg.HaveNots {
				k++
			}
			missing <- k
		}()
		for {
			t := time.Now()
			out, err := sneg.Reconcile(msg)
			server += time.Since(t)
			if err != nil {
				b.Fatal(err)
			}
			rounds++
			msg, err = cneg.Reconcile(out)
			if err != nil {
				b.Fatal(err)
			}
			if msg == "" {
				break
			}
		}
		if k := <-missing; k != n-held {
			b.Fatalf("the client learned of %d missing events, want %d", k, n-held)
		}
	}
	b.ReportMetric(float64(server.Microseconds())/1e3/float64(b.N), "server-ms/op")
	b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
}
