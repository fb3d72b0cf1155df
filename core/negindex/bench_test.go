package negindex

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
)

// BenchmarkFirstRound is the server's side of a NIP-77 session over the
// whole index, against go-nostr's vector built from the same pairs (what a
// session cost before, without the store query that filled it): select +
// the answer to the client's first message, the client holding the same
// set. Reported: wall and CPU per session for both, and the index's heap
// per million events (measured, with the postings of two tags per event).
//
//	go test -run '^$' -bench FirstRound -benchtime 5x ./core/negindex/
func BenchmarkFirstRound(b *testing.B) {
	for _, n := range []int{20_000, 1_000_000} {
		b.Run(sizeName(n), func(b *testing.B) { benchFirstRound(b, n) })
	}
}

func sizeName(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

func benchFirstRound(b *testing.B, n int) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := New(nil)
	events := corpusLikeEvents(n)
	ix.Load(events)
	events = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	heapPerM := float64(after.HeapAlloc-before.HeapAlloc) / float64(n) * 1e6 / (1 << 20)

	snap, _, _ := ix.Select(nostr.Filter{}, n)
	client := vector.New()
	for _, it := range snap.Range(0, snap.Size()) {
		client.Insert(it.Timestamp, it.ID)
	}
	client.Seal()
	msg := negentropy.New(client, 60_000).Start()

	b.Run("index", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			s, ok, err := ix.Select(nostr.Filter{}, n)
			if !ok || err != nil {
				b.Fatal(ok, err)
			}
			if _, err := negentropy.New(s, 60_000).Reconcile(msg); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		b.ReportMetric(heapPerM, "heap-MiB/1M-events")
	})
	b.Run("vector", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			v := vector.New()
			for _, it := range snap.Range(0, snap.Size()) {
				v.Insert(it.Timestamp, it.ID)
			}
			v.Seal()
			if _, err := negentropy.New(v, 60_000).Reconcile(msg); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	})
}

// cpuTime is this process's user+system CPU in nanoseconds: steadier than
// wall time on a shared machine (GC workers included).
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkWholeSessionAfterCollection is an in-sync whole-store session
// (select + the answer to the client's first message) with a collection
// since the last one, as between peers' sessions on a busy server: "held"
// within WholeHold, "weak" with the hold off (what every session cost
// before it, issue 27 part 3). The collection itself is not timed.
//
//	go test -run '^$' -bench WholeSessionAfterCollection -benchtime 5x ./core/negindex/
func BenchmarkWholeSessionAfterCollection(b *testing.B) {
	const n = 1_000_000
	ix := New(nil)
	ix.Load(corpusLikeEvents(n))
	snap, _, _ := ix.Select(nostr.Filter{}, n)
	client := &Snapshot{items: snap.items, sh: &shared{items: snap.items}}
	msg := negentropy.New(client, 60_000).Start()
	snap = nil
	for _, held := range []bool{true, false} {
		name := "held"
		if !held {
			name = "weak"
			ix.cacheMu.Lock()
			ix.hold.d = 0
			ix.releaseLocked()
			ix.cacheMu.Unlock()
		}
		b.Run(name, func(b *testing.B) {
			var cpu int64
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				b.StartTimer()
				cpu0 := cpuTime()
				s, ok, err := ix.Select(nostr.Filter{}, n)
				if !ok || err != nil {
					b.Fatal(ok, err)
				}
				if _, err := negentropy.New(s, 60_000).Reconcile(msg); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - cpu0
			}
			b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}
