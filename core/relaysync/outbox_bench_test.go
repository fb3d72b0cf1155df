package relaysync

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// outboxWorld is the seed's scale shape (repos × roots root events, 5 of
// nRelays relays per repository) plus a conversation: every root has an
// author and two repliers from a pool of people, each with a NIP-65 list
// of 3 write relays from a pool of outbox relays.
func outboxWorld(repos, roots, nRelays, people, outboxRelays int) []update {
	var us []update
	for p := 0; p < people; p++ {
		u := update{writer: pubkey(1000 + p)}
		for j := 0; j < 3; j++ {
			u.writes = append(u.writes, "wss://outbox"+itoa((p*11+j*17)%outboxRelays)+".example")
		}
		us = append(us, u)
	}
	id := 0
	for r := 0; r < repos; r++ {
		relays := []string{selfURL}
		for j := 0; j < 5; j++ {
			relays = append(relays, relayURL((r*7+j*13)%nRelays))
		}
		us = append(us, update{addr: repoAddr(r), relays: relays, listsSelf: true})
		for e := 0; e < roots; e++ {
			id++
			root := hexID(id)
			us = append(us, update{id: root, addrs: []string{repoAddr(r)}, people: []string{pubkey(1000 + id%people)}})
			for k := 1; k <= 2; k++ {
				us = append(us, update{replyTo: []string{root}, people: []string{pubkey(1000 + (id*k+7)%people)}})
			}
		}
	}
	return us
}

// benchOutbox lands the world in a manager (on this goroutine; Run is not
// started, so the actor's state is ours), connects every relay it targets
// (layer 1, layers 2+3 and, with outbox, the people filters are opened)
// and reports the retained heap of the whole sync state, the relays it
// connects (of them outbox relays), the filters open and the time to apply
// and connect (wall and CPU).
func benchOutbox(b *testing.B, outbox bool, repos, roots, nRelays int) {
	var mb float64
	var relays, outboxRelays, filters int
	var took, cpu time.Duration
	for i := 0; i < b.N; i++ {
		// The world is built after the baseline and dropped before the
		// measure: as with events, the strings the state keeps count,
		// the rest is garbage.
		before := heapInUse()
		world := outboxWorld(repos, roots, nRelays, repos, 2000)
		cfg := config.Sync{Outbox: outbox, DisconnectCheckInterval: config.Duration(time.Hour)}
		m, err := NewManager(Options{Conns: &fakeConns{}, Health: &fakeHealth{}, Self: []string{selfURL}, Config: cfg, Rand: func() float64 { return 0.5 }},
			env.Env{Clock: clock.NewFake(t0), Metrics: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		m.conns = nopConns{}
		batch := world
		if !outbox {
			batch = nil
			for _, u := range world {
				if u.addr != "" || u.id != "" {
					batch = append(batch, u)
				}
			}
		}
		start, cpu0 := time.Now(), cpuTime()
		m.applyUpdates(batch)
		for u := range m.relays {
			m.onConnected(u)
		}
		took, cpu = time.Since(start), cpuTime()-cpu0
		world, batch = nil, nil
		after := heapInUse()
		mb = float64(after-before) / (1 << 20)
		relays, outboxRelays, filters = len(m.relays), 0, m.nFilters
		for _, t := range m.targets {
			if t.Outbox {
				outboxRelays++
			}
		}
		runtime.KeepAlive(m)
	}
	b.ReportMetric(mb, "state-MB")
	b.ReportMetric(float64(relays), "connections")
	b.ReportMetric(float64(outboxRelays), "outbox-relays")
	b.ReportMetric(float64(filters), "filters")
	b.ReportMetric(float64(took.Milliseconds()), "wall-ms")
	b.ReportMetric(float64(cpu.Milliseconds()), "cpu-ms")
}

// cpuTime is the process's CPU time (user and system, GC included): on a
// shared machine wall time says more about the neighbours than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type nopConns struct{}

func (nopConns) Connect(string)                                    {}
func (nopConns) Subscribe(string, string, []nostr.Filter, CatchUp) {}
func (nopConns) Unsubscribe(string, string)                        {}
func (nopConns) Close(string)                                      {}

func BenchmarkOutboxOff1x(b *testing.B)  { benchOutbox(b, false, 1000, 50, 100) }
func BenchmarkOutboxOn1x(b *testing.B)   { benchOutbox(b, true, 1000, 50, 100) }
func BenchmarkOutboxOff10x(b *testing.B) { benchOutbox(b, false, 10000, 50, 500) }
func BenchmarkOutboxOn10x(b *testing.B)  { benchOutbox(b, true, 10000, 50, 500) }
