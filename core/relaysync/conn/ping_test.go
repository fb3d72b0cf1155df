package conn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// heldSink is a pipeline that takes its time: it holds every event until
// release is closed.
type heldSink struct {
	*sink
	release chan struct{}
}

func (h heldSink) Ingest(ctx context.Context, evt *nostr.Event, meta policy.Meta) (bool, string) {
	select {
	case <-h.release:
	case <-ctx.Done():
		return false, "error: shutting down"
	}
	return h.sink.Ingest(ctx, evt, meta)
}

// pongWait is the peer's patience with each ping (khatru: 60 s). A reader
// that is reading answers at once; one that is not never does.
const pongWait = 20 * time.Second

// The live reader blocked on a full event queue (256 events) while the
// pipeline was slow, which stopped reading the socket and so answering the
// peer's pings: khatru drops such a client after 60 s. It now reads on,
// answering pings, while the events wait in a byte-bounded queue.
func TestSyncLiveConnectionAnswersPingsWhileThePipelineIsSlow(t *testing.T) {
	ps := newPeerServer(t)
	snk := heldSink{sink: newSink(), release: make(chan struct{})}
	clk := clock.NewFake(time.Now())
	p, rec := newTestPool(t, clk, snk, &scriptedCatchUp{}, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	p.Subscribe(ps.url, "s-1", []nostr.Filter{{Tags: nostr.TagMap{"a": {repoAddr}}}}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-1"`)
	rec.expect(t, "done s-1")
	const n = 600
	for i := 0; i < n; i++ {
		ps.send(t, eventFrame("s-1", signed(t, 1621, nostr.Tags{{"a", repoAddr}}, clk.Now())))
	}
	ps.mu.Lock()
	c := ps.conns[len(ps.conns)-1]
	ps.mu.Unlock()
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), pongWait)
		err := c.Ping(ctx)
		cancel()
		if err != nil {
			close(snk.release)
			t.Fatalf("ping %d unanswered while the pipeline held %d events: %v", i+1, n, err)
		}
	}
	close(snk.release)
	snk.wait(t, n)
	rec.none(t)
}

// A peer that gets further ahead of ingestion than the queue's bound is
// disconnected at once, with the reason, instead of being read no more (and
// dropped by its own ping timeout later); the manager's reconnect catches
// up with what was not ingested.
func TestSyncLivePeerOutpacingIngestionIsDisconnected(t *testing.T) {
	ps := newPeerServer(t)
	var once sync.Once
	snk := heldSink{sink: newSink(), release: make(chan struct{})}
	defer once.Do(func() { close(snk.release) })
	clk := clock.NewFake(time.Now())
	p, rec := newTestPool(t, clk, snk, &scriptedCatchUp{}, func(o *Options) { o.QueueBytes = 8 << 10 })
	p.Connect(ps.url)
	rec.expect(t, "connected")
	p.Subscribe(ps.url, "s-1", []nostr.Filter{{Tags: nostr.TagMap{"a": {repoAddr}}}}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-1"`)
	rec.expect(t, "done s-1")
	deadline := testwait.Deadline(t)
	for i := 0; i < 200; i++ {
		ps.mu.Lock()
		c := ps.conns[len(ps.conns)-1]
		ps.mu.Unlock()
		if c.Write(context.Background(), websocket.MessageText, []byte(eventFrame("s-1", signed(t, 1621, nostr.Tags{{"a", repoAddr}}, clk.Now())))) != nil {
			break // we hung up
		}
		if time.Now().After(deadline) {
			t.Fatal("still sending at the deadline")
		}
	}
	rec.expect(t, "disconnected")
	once.Do(func() { close(snk.release) })
}
