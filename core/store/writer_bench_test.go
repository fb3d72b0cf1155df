package store

import (
	"context"
	"sync"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// BenchmarkGroupCommitOverlap measures durable saves with the next batch
// applied while the previous one syncs (the writer since issue 27 part 5)
// against the writer that synced each batch before applying the next, in
// alternating rounds of the same run: each unit is 256 saves from 256
// goroutines at once (grasp-bench's 4 connections × 64 in flight), each
// answered after its batch's fsync. Read the ratio, overlap/serial.
//
//	go test -run '^$' -bench GroupCommitOverlap -benchtime 40x ./core/store/
func BenchmarkGroupCommitOverlap(b *testing.B) {
	const inFlight = 256
	b.StopTimer()
	evts := benchEvents(b, b.N*inFlight)
	open := func(serial bool) *Store {
		s, err := New(Options{Dir: b.TempDir()}, env.Env{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		s.badger().w.serial = serial
		return s
	}
	side := func(name string, s *Store) testkit.Side {
		return testkit.Side{Name: name, Run: func(i int) {
			var wg sync.WaitGroup
			for _, e := range evts[i*inFlight : (i+1)*inFlight] {
				wg.Go(func() {
					if err := s.Events().SaveEvent(context.Background(), e); err != nil {
						b.Errorf("save %s: %v", e.ID, err)
					}
				})
			}
			wg.Wait()
		}}
	}
	b.StartTimer()
	testkit.AlternateRounds(b, "256-saves", side("serial", open(true)), side("overlap", open(false)))
}
