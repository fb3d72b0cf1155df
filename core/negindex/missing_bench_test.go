package negindex

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/grasp-dev/grasp/internal/testkit"
)

// BenchmarkMissingOnePercent is a whole NIP-77 session over the index with
// the client lacking 1 % of the events, every round, both sides in this
// process: the server (Select and each Reconcile, frames of 500,000 bytes
// as negentropy_frame_bytes) timed apart from the client (catchup's side:
// a built Snapshot, or go-nostr's vector as before issue 27 part 3, with
// frames of 60,000 bytes, its FrameLimit, or 500,000, its LargeFrameLimit).
// The "engine" arms run both sides on this package's Engine, the others on
// go-nostr's (their messages are the same: engine_test.go).
// Reported: server and client CPU time (the thread's, testkit.ThreadCPU:
// the machine is shared), rounds, and the bytes each way.
// 317 ms of server time per session at 200,000 before the running sums
// (fingerprint.go), 61 ms after; at 1,000,000 the vector client took 12 s
// over 91 rounds, the snapshot client 0.35 s.
//
//	go test -run '^$' -bench MissingOnePercent -benchtime 1x ./core/negindex/
func BenchmarkMissingOnePercent(b *testing.B) {
	for _, n := range []int{200_000, 1_000_000} {
		for _, c := range []struct {
			name  string
			frame int
			vec   bool
			ours  bool
		}{{"snapshot-60k", 60_000, false, false}, {"snapshot-500k", 500_000, false, false}, {"vector-60k", 60_000, true, false},
			{"engine-60k", 60_000, false, true}, {"engine-500k", 500_000, false, true}} {
			if c.vec && n > 200_000 && testing.Short() {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s", sizeName(n), c.name), func(b *testing.B) { benchMissing(b, n, c.frame, c.vec, c.ours) })
		}
	}
}

func benchMissing(b *testing.B, n, clientFrame int, useVector, ours bool) {
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
	held := 0
	var client negentropy.Storage
	if useVector {
		v := vector.New()
		for i, it := range snap.Range(0, snap.Size()) {
			if i%100 != 50 {
				v.Insert(it.Timestamp, it.ID)
				held++
			}
		}
		v.Seal()
		client = v
	} else {
		bld := NewSnapshotBuilder(n)
		for i, it := range snap.Range(0, snap.Size()) {
			if i%100 != 50 {
				bld.Add(it.Timestamp, it.ID)
				held++
			}
		}
		client = bld.Snapshot()
	}
	runtime.LockOSThread() // both sides run on this goroutine: its thread's CPU is theirs
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	var server, cl time.Duration
	cpu := func() time.Duration { return time.Duration(testkit.ThreadCPU(b)) }
	rounds, up, down := 0, 0, 0
	for b.Loop() {
		t := cpu()
		cneg := engineFor(b, client, clientFrame, ours)
		msg := cneg.Start()
		cl += cpu() - t
		t = cpu()
		s, ok, err := ix.Select(nostr.Filter{}, n)
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
		sneg := engineFor(b, s, 500_000, ours)
		server += cpu() - t
		missing := make(chan int)
		go func() {
			for range cneg.Haves() {
			}
		}()
		go func() {
			k := 0
			for range cneg.HaveNots() {
				k++
			}
			missing <- k
		}()
		for msg != "" {
			up += len(msg) / 2
			t := cpu()
			out, err := sneg.Reconcile(msg)
			server += cpu() - t
			if err != nil {
				b.Fatal(err)
			}
			down += len(out) / 2
			rounds++
			t = cpu()
			msg, err = cneg.Reconcile(out)
			cl += cpu() - t
			if err != nil {
				b.Fatal(err)
			}
		}
		if k := <-missing; k != n-held {
			b.Fatalf("the client learned of %d missing events, want %d", k, n-held)
		}
	}
	per := float64(b.N)
	b.ReportMetric(float64(server.Microseconds())/1e3/per, "server-ms/op")
	b.ReportMetric(float64(cl.Microseconds())/1e3/per, "client-ms/op")
	b.ReportMetric(float64(rounds)/per, "rounds/op")
	b.ReportMetric(float64(up)/1e3/per, "KB-up/op")
	b.ReportMetric(float64(down)/1e3/per, "KB-down/op")
}

// engineFor is this package's engine over st (NewReconciler) or go-nostr's.
func engineFor(b *testing.B, st negentropy.Storage, frame int, ours bool) Reconciler {
	if !ours {
		return goNostrEngine{negentropy.New(st, frame)}
	}
	r, err := NewReconciler(st, frame)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
