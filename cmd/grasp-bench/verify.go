package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/sigcheck"
)

// verifyRate measures how many event signatures this binary's secp256k1
// library (btcec, or libsecp256k1 when built with -tags libsecp256k1)
// checks per second on the given number of goroutines, over the corpus's
// own events: the ceiling on what a relay that verifies every event can
// ingest on that many cores. It runs for about d, then as long again with
// grasp's own check (core/sigcheck, its table of verified signatures
// bypassed: every event verified), the ceiling of the write path as built.
func verifyRate(c *corpus, goroutines int, d time.Duration) (verifyResult, error) {
	v := verifyResult{Library: verifyLibrary(), Goroutines: goroutines, CheckLibrary: checkLibrary()}
	n := min(len(c.items), 4096)
	evts := make([]nostr.Event, n)
	for i := range evts {
		evt, err := c.event(i)
		if err != nil {
			return v, err
		}
		evts[i] = *evt
	}
	var err error
	// CheckSignature hashes the serialised event too, as a relay does.
	v.Rate, v.PerCPU, err = rate(evts, goroutines, d, func(e *nostr.Event) bool {
		ok, err := e.CheckSignature()
		return ok && err == nil
	})
	if err != nil {
		return v, err
	}
	v.CheckRate, v.CheckPerCPU, err = rate(evts, goroutines, d, func(e *nostr.Event) bool {
		return sigcheck.EventUncached(e) == sigcheck.Valid
	})
	return v, err
}

// rate runs check over evts on goroutines for about d: checks per wall
// second and per CPU second.
func rate(evts []nostr.Event, goroutines int, d time.Duration, check func(*nostr.Event) bool) (wallRate, perCPU float64, err error) {
	n := len(evts)
	var done atomic.Int64
	var bad atomic.Int64
	deadline := time.Now().Add(d)
	start, cpu0 := time.Now(), cpuTime()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for k := g; time.Now().Before(deadline); k += goroutines {
				if !check(&evts[k%n]) {
					bad.Add(1)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	wall, cpu := time.Since(start), cpuTime()-cpu0
	if bad.Load() > 0 {
		return 0, 0, fmt.Errorf("%d signatures did not verify", bad.Load())
	}
	return float64(done.Load()) / wall.Seconds(), float64(done.Load()) / cpu.Seconds(), nil
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

// checkLibrary names what core/sigcheck verifies with in this build.
func checkLibrary() string {
	if libsecp256k1 {
		return "sigcheck (libsecp256k1)"
	}
	return "sigcheck (pure Go)"
}
