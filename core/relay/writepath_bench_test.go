package relay

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
)

// BenchmarkWritePath measures the decision behind issue 28 part 2: the
// write path called directly (Accept) against the same steps reached
// through khatru v0.19.1's AddEvent as before (RejectEvent hook, then the
// StoreEvent/ReplaceEvent hook answering ErrDupEvent for every OK true,
// with the result carried back in a context value). Each side has its own
// store (badger, no fsync: CPU is measured) and takes the same pre-signed
// events, in alternating rounds; the figures are CPU time and allocations
// per event and the ratio khatru ÷ direct:
//
//	go test -run '^$' -bench WritePath -benchtime 4000x ./core/relay/
func BenchmarkWritePath(b *testing.B) {
	direct := startRelay(b, Options{})
	viaKhatru := startRelay(b, Options{})
	kr := khatruWritePath(viaKhatru.srv)

	k := newKey(b)
	now := time.Now().Unix()
	mk := func(side string) []*nostr.Event {
		evts := make([]*nostr.Event, b.N)
		for i := range evts {
			kind := 1
			if i%4 == 3 {
				kind = 30617 // a quarter addressable: the replace path
			}
			d := side + strconv.Itoa(i)
			evts[i] = k.event(b, kind, now, nostr.Tags{{"d", d}}, "write path "+d)
		}
		return evts
	}
	a, c := mk("direct"), mk("khatru")
	meta := policy.Meta{Source: policy.SourceSync}
	ctx := context.Background()
	const rounds = 4
	var costs [2]cost
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		from, to := r*len(a)/rounds, (r+1)*len(a)/rounds
		runDirect := func() {
			for _, evt := range a[from:to] {
				if res := direct.srv.Accept(ctx, evt, meta); !res.OK() {
					b.Fatalf("direct: %s", res.Text())
				}
			}
		}
		runKhatru := func() {
			for _, evt := range c[from:to] {
				if res := kr.ingest(ctx, evt, meta); !res.OK() {
					b.Fatalf("khatru: %s", res.Text())
				}
			}
		}
		if r%2 == 0 {
			costs[0] = costs[0].plus(measure(runDirect))
			costs[1] = costs[1].plus(measure(runKhatru))
		} else {
			costs[1] = costs[1].plus(measure(runKhatru))
			costs[0] = costs[0].plus(measure(runDirect))
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(costs[0].cpu.Nanoseconds())/n, "direct-cpu-ns/event")
	b.ReportMetric(float64(costs[1].cpu.Nanoseconds())/n, "khatru-cpu-ns/event")
	b.ReportMetric(float64(costs[0].allocs)/n, "direct-allocs/event")
	b.ReportMetric(float64(costs[1].allocs)/n, "khatru-allocs/event")
	b.ReportMetric(float64(costs[1].cpu)/float64(costs[0].cpu), "cpu-khatru/direct")
	b.ReportMetric(float64(costs[1].allocs)/float64(costs[0].allocs), "allocs-khatru/direct")
}

func (c cost) plus(d cost) cost {
	return cost{cpu: c.cpu + d.cpu, allocs: c.allocs + d.allocs, bytes: c.bytes + d.bytes}
}

// khatruPath is the write path as it ran through khatru before issue 28,
// rebuilt on today's steps for the comparison.
type khatruPath struct {
	s  *Server
	rl *khatru.Relay
}

type benchCallKey struct{}

type benchCall struct {
	meta policy.Meta
	res  outcome.Result
}

func khatruWritePath(s *Server) *khatruPath {
	rl := khatru.NewRelay() // its expiration goroutine is never stopped: one reason it went
	rl.RejectEvent = append(rl.RejectEvent, func(ctx context.Context, evt *nostr.Event) (bool, string) {
		c := ctx.Value(benchCallKey{}).(*benchCall)
		if r, refused := s.rejectEvent(evt, c.meta); refused {
			return true, r.Text()
		}
		return false, ""
	})
	hook := func(ctx context.Context, evt *nostr.Event) error {
		c := ctx.Value(benchCallKey{}).(*benchCall)
		c.res = s.commit(ctx, evt, c.meta, false)
		if !c.res.OK() {
			return errors.New(c.res.Text())
		}
		return eventstore.ErrDupEvent
	}
	rl.StoreEvent = append(rl.StoreEvent, hook)
	rl.ReplaceEvent = append(rl.ReplaceEvent, hook)
	return &khatruPath{s: s, rl: rl}
}

func (p *khatruPath) ingest(ctx context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result {
	if !evt.CheckID() {
		return outcome.New(outcome.Invalid, "id is computed incorrectly")
	}
	if ok, err := evt.CheckSignature(); err != nil || !ok {
		return outcome.New(outcome.Invalid, "signature is invalid")
	}
	c := &benchCall{meta: meta}
	if _, err := p.rl.AddEvent(context.WithValue(ctx, benchCallKey{}, c), evt); err != nil {
		return outcome.Refused(err.Error(), outcome.Error)
	}
	return c.res
}
