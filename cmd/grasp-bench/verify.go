package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// verifyRate measures how many event signatures this binary's secp256k1
// library (btcec, or libsecp256k1 when built with -tags libsecp256k1)
// checks per second on the given number of goroutines, over the corpus's
// own events: the ceiling on what a relay that verifies every event can
// ingest on that many cores. It runs for about d.
func verifyRate(c *corpus, goroutines int, d time.Duration) (verifyResult, error) {
	v := verifyResult{Library: verifyLibrary(), Goroutines: goroutines}
	n := min(len(c.items), 4096)
	evts := make([]nostr.Event, n)
	for i := range evts {
		frame := c.items[i].frame
		if err := evts[i].UnmarshalJSON(frame[len(`["EVENT",`) : len(frame)-1]); err != nil {
			return v, fmt.Errorf("corpus event %d: %w", i, err)
		}
	}
	var done atomic.Int64
	var bad atomic.Int64
	deadline := time.Now().Add(d)
	start, cpu0 := time.Now(), cpuTime()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for k := g; time.Now().Before(deadline); k += goroutines {
				// CheckSignature hashes the serialised event too, as a relay does.
				if ok, err := evts[k%n].CheckSignature(); !ok || err != nil {
					bad.Add(1)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	wall, cpu := time.Since(start), cpuTime()-cpu0
	if bad.Load() > 0 {
		return v, fmt.Errorf("%d signatures did not verify", bad.Load())
	}
	v.Rate = float64(done.Load()) / wall.Seconds()
	v.PerCPU = float64(done.Load()) / cpu.Seconds()
	return v, nil
}

// cpuTime is the CPU time this process has used. Verifications per CPU
// second stay meaningful when other processes share the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// verifyLibrary names the library CheckSignature uses in this build.
func verifyLibrary() string {
	if libsecp256k1 {
		return "libsecp256k1 (cgo)"
	}
	return "btcec (pure Go)"
}
