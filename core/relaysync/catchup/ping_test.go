package catchup

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// pongWait is how long the pinging peer waits for each pong before it
// drops the client, as khatru does after 60 s. A reader that is reading
// answers in microseconds; one that is not never does.
const pongWait = 20 * time.Second

// pingingPeer answers REQs from its events and, after the first REQ has
// been answered, pings the client a few times, dropping it if a pong is
// late (khatru's PongWait).
type pingingPeer struct {
	events []*nostr.Event
	pings  int

	once    sync.Once
	settled chan struct{} // closed when the pings are done, answered or not
	mu      sync.Mutex
	ponged  int
	dropped error
}

func (p *pingingPeer) serve(tb testing.TB) string {
	p.settled = make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		for {
			_, msg, err := c.Read(ctx) // also takes the pongs
			if err != nil {
				return
			}
			if label(msg) != "REQ" {
				continue
			}
			var req nostr.ReqEnvelope
			if err := req.FromJSON(string(msg)); err != nil || len(req.Filters) == 0 {
				return
			}
			f, n := req.Filters[0], 0
			for _, e := range p.events {
				if f.Matches(e) && (f.Limit == 0 || n < f.Limit) {
					b, _ := nostr.EventEnvelope{SubscriptionID: &req.SubscriptionID, Event: *e}.MarshalJSON()
					if c.Write(ctx, websocket.MessageText, b) != nil {
						return
					}
					n++
				}
			}
			b, _ := nostr.EOSEEnvelope(req.SubscriptionID).MarshalJSON()
			if c.Write(ctx, websocket.MessageText, b) != nil {
				return
			}
			p.once.Do(func() { go p.ping(ctx, c) })
		}
	}))
	tb.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func (p *pingingPeer) ping(ctx context.Context, c *websocket.Conn) {
	defer close(p.settled)
	for i := 0; i < p.pings; i++ {
		pctx, cancel := context.WithTimeout(ctx, pongWait)
		err := c.Ping(pctx)
		cancel()
		p.mu.Lock()
		if err != nil {
			p.dropped = err
			p.mu.Unlock()
			c.Close(websocket.StatusPolicyViolation, "pong timeout")
			return
		}
		p.ponged++
		p.mu.Unlock()
	}
}

// slowSink is a pipeline that takes longer over a page than the peer's
// PongWait: it holds the first event until the peer's pings are settled.
type slowSink struct {
	*memStore
	hold <-chan struct{}
}

func (s slowSink) Deliver(ctx context.Context, e *nostr.Event) bool {
	select {
	case <-s.hold:
	case <-ctx.Done():
		return false
	}
	return s.memStore.Deliver(ctx, e)
}

// A peer relay (khatru) drops a client that leaves its pings unanswered for
// 60 s. The catch-up reader stopped reading its socket while the pipeline
// stored a page (a 64-frame channel was full), so a grasp that took longer
// than PongWait over a page was dropped. The reader now keeps reading, and
// so answering pings, while the consumer is slow: every ping is answered
// while the sink holds the page, and the catch-up completes.
func TestSyncCatchUpAnswersPingsWhileThePipelineIsSlow(t *testing.T) {
	evts := corpus(t, 400, 1)
	peer := &pingingPeer{events: evts, pings: 3}
	url := peer.serve(t)
	local := newMem()
	sink := slowSink{memStore: local, hold: peer.settled}
	c := newClient(t, Config{}, env.Env{})
	res, err := c.CatchUp(ctxFor(t), url, allKinds, local, sink, realClock(t, Options{PageLimit: 500}))
	peer.mu.Lock()
	ponged, dropped := peer.ponged, peer.dropped
	peer.mu.Unlock()
	if dropped != nil || ponged != peer.pings {
		t.Fatalf("the peer saw %d of %d pongs and dropped us (%v) while the pipeline held a page", ponged, peer.pings, dropped)
	}
	if err != nil || res.Delivered != len(evts) {
		t.Fatalf("catch-up: %+v, %v; want %d delivered", res, err, len(evts))
	}
	requireNoLeak(t)
}

// The reader's queue is bounded in bytes: a peer that sends far more than
// was asked for is read only as fast as the caller takes frames.
func TestSyncCatchUpReadBufferIsBounded(t *testing.T) {
	q := newFrameQueue(1100)
	ctx := testwait.Context(t)
	frame := make([]byte, 300)
	for i := 0; i < 2; i++ {
		if err := q.push(ctx, frame); err != nil {
			t.Fatal(err)
		}
	}
	blocked, cancel := context.WithCancel(ctx)
	pushed := make(chan error, 1)
	go func() { pushed <- q.push(blocked, frame) }()
	go func() { pushed <- q.push(blocked, frame) }()
	// a third frame fits (3 × 364 bytes with overhead), a fourth waits
	first := <-pushed
	if first != nil {
		t.Fatal(first)
	}
	select {
	case err := <-pushed:
		t.Fatalf("a push beyond the budget went through: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok, _ := q.pop(); !ok {
		t.Fatal("nothing queued")
	}
	select {
	case err := <-pushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-testwait.After(t):
		t.Fatal("room freed by a pop did not let the reader go on")
	}
	cancel()
	q.close(errors.New("gone"))
	n := 0
	for {
		_, ok, err := q.pop()
		if !ok {
			if err == nil {
				t.Fatal("the reader's end was not reported")
			}
			break
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d frames drained, want 3", n)
	}
}
