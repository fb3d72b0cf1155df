package conn

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// G03-9: an outbox relay delivers at most its daily bound of events to the
// pipeline; the one over it is dropped, the connection ends, a new Connect
// the same day is refused without dialling, and the next UTC day it is
// dialled again. Events are counted by why the relay is synced.
func TestG03_9_OutboxRelayDailyEventBound(t *testing.T) {
	ps := newPeerServer(t)
	snk := newSink()
	clk := clock.NewFake(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	p, rec := newTestPool(t, clk, snk, &scriptedCatchUp{}, nil)
	rec.setRole(relaysync.RelayRole{Source: relaysync.SourceOutbox, EventsPerDay: 3})
	p.Connect(ps.url)
	rec.expect(t, "connected")
	<-ps.joined
	f := nostr.Filter{Tags: nostr.TagMap{"E": {"00"}}}
	p.Subscribe(ps.url, "s-1", []nostr.Filter{f}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-1"`)
	rec.expect(t, "done s-1")
	for i := 0; i < 5; i++ {
		ps.send(t, eventFrame("s-1", signed(t, 1111, nostr.Tags{{"E", "00"}}, clk.Now())))
	}
	rec.expect(t, "disconnected")
	if n := snk.count(); n != 3 {
		t.Fatalf("%d events reached the pipeline, want the daily bound 3", n)
	}
	if got := counter(t, p.m.pulled.WithLabelValues("outbox", resStored)); got != 3 {
		t.Fatalf("pulled{outbox,stored} %v, want 3", got)
	}
	if got := counter(t, p.m.pulled.WithLabelValues("outbox", resOverBound)); got < 1 {
		t.Fatalf("pulled{outbox,over_daily_bound} %v, want at least 1", got)
	}

	// the same day: refused before dialling
	dials := counter(t, p.m.dials.WithLabelValues("ok")) + counter(t, p.m.dials.WithLabelValues("failed"))
	p.Connect(ps.url)
	rec.expect(t, "disconnected")
	if now := counter(t, p.m.dials.WithLabelValues("ok")) + counter(t, p.m.dials.WithLabelValues("failed")); now != dials {
		t.Fatalf("a relay over its daily bound was dialled (%v dials, was %v)", now, dials)
	}

	// the next UTC day it is dialled again and its events flow
	clk.Advance(12 * time.Hour)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	<-ps.joined
	p.Subscribe(ps.url, "s-2", []nostr.Filter{f}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-2"`)
	rec.expect(t, "done s-2")
	ps.send(t, eventFrame("s-2", signed(t, 1111, nostr.Tags{{"E", "00"}}, clk.Now())))
	snk.wait(t, 4)
}

// A repository relay has no daily bound: its events are counted as from
// "repo".
func TestRepoRelayHasNoDailyBound(t *testing.T) {
	ps := newPeerServer(t)
	snk := newSink()
	clk := clock.NewFake(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	p, rec := newTestPool(t, clk, snk, &scriptedCatchUp{}, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	f := nostr.Filter{Tags: nostr.TagMap{"E": {"00"}}}
	p.Subscribe(ps.url, "s-1", []nostr.Filter{f}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-1"`)
	rec.expect(t, "done s-1")
	for i := 0; i < 5; i++ {
		ps.send(t, eventFrame("s-1", signed(t, 1111, nostr.Tags{{"E", "00"}}, clk.Now())))
	}
	snk.wait(t, 5)
	// counted once the pipeline has answered, just after the sink saw it
	testwait.For(t, "five events counted from a repository relay", func() bool {
		return counter(t, p.m.pulled.WithLabelValues("repo", resStored)) == 5
	})
	rec.none(t)
}
