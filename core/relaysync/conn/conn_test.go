package conn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// peerServer is a scripted relay: it records frames from us and lets the
// test push frames to the connected client.
type peerServer struct {
	url    string
	mu     sync.Mutex
	conns  []*websocket.Conn
	got    chan string
	joined chan struct{}
}

func newPeerServer(t *testing.T) *peerServer {
	t.Helper()
	ps := &peerServer{got: make(chan string, 256), joined: make(chan struct{}, 8)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.SetReadLimit(1 << 20)
		ps.mu.Lock()
		ps.conns = append(ps.conns, c)
		ps.mu.Unlock()
		ps.joined <- struct{}{}
		for {
			_, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			select {
			case ps.got <- string(b):
			default:
			}
		}
	}))
	t.Cleanup(srv.Close)
	ps.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return ps
}

func (ps *peerServer) send(t *testing.T, frame string) {
	t.Helper()
	ps.mu.Lock()
	c := ps.conns[len(ps.conns)-1]
	ps.mu.Unlock()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

func (ps *peerServer) dropAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, c := range ps.conns {
		c.CloseNow()
	}
}

// expectFrame waits for a frame from us starting with prefix.
func (ps *peerServer) expectFrame(t *testing.T, prefix string) string {
	t.Helper()
	deadline := testwait.After(t)
	for {
		select {
		case f := <-ps.got:
			if strings.HasPrefix(f, prefix) {
				return f
			}
		case <-deadline:
			t.Fatalf("no frame starting with %s", prefix)
		}
	}
}

// recorder is the Reporter: every call becomes a line; role is what Role
// answers for every relay.
type recorder struct {
	ch   chan string
	mu   sync.Mutex
	role relaysync.RelayRole
}

func newRecorder() *recorder {
	return &recorder{ch: make(chan string, 256), role: relaysync.RelayRole{Source: relaysync.SourceRepo}}
}

func (r *recorder) Role(string) relaysync.RelayRole  { r.mu.Lock(); defer r.mu.Unlock(); return r.role }
func (r *recorder) setRole(role relaysync.RelayRole) { r.mu.Lock(); r.role = role; r.mu.Unlock() }

func (r *recorder) Connected(url string)             { r.ch <- "connected" }
func (r *recorder) Disconnected(url string, _ error) { r.ch <- "disconnected" }
func (r *recorder) SubscriptionDone(url, id string)  { r.ch <- "done " + id }
func (r *recorder) SubscriptionClosed(url, id, reason string) {
	r.ch <- "closed " + id + " " + reason
}
func (r *recorder) Notice(url, msg string) { r.ch <- "notice " + msg }

func (r *recorder) expect(t *testing.T, prefix string) string {
	t.Helper()
	select {
	case got := <-r.ch:
		if !strings.HasPrefix(got, prefix) {
			t.Fatalf("report %q, want prefix %q", got, prefix)
		}
		return got
	case <-testwait.After(t):
		t.Fatalf("no report, want %q", prefix)
	}
	return ""
}

func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-r.ch:
		t.Fatalf("unexpected report %q", got)
	default:
	}
}

// sink records ingested events.
type sink struct {
	mu   sync.Mutex
	got  []*nostr.Event
	meta []policy.Meta
	in   chan struct{}
}

func newSink() *sink { return &sink{in: make(chan struct{}, 1024)} }

func (s *sink) Ingest(_ context.Context, evt *nostr.Event, meta policy.Meta) (bool, string) {
	s.mu.Lock()
	s.got = append(s.got, evt)
	s.meta = append(s.meta, meta)
	s.mu.Unlock()
	s.in <- struct{}{}
	return true, ""
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func (s *sink) wait(t *testing.T, n int) {
	t.Helper()
	for s.count() < n {
		select {
		case <-s.in:
		case <-testwait.After(t):
			t.Fatalf("ingested %d events, want %d", s.count(), n)
		}
	}
}

// scriptedCatchUp answers every catch-up with err (nil: success at once)
// after delivering evts; calls counts them and block holds them.
type scriptedCatchUp struct {
	mu    sync.Mutex
	err   error
	evts  []*nostr.Event
	calls []catchup.Options
	block chan struct{}
}

func (c *scriptedCatchUp) CatchUp(ctx context.Context, url string, f nostr.Filter, _ catchup.Local, s catchup.Sink, o catchup.Options) (catchup.Result, error) {
	c.mu.Lock()
	c.calls = append(c.calls, o)
	err, evts, block := c.err, c.evts, c.block
	c.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return catchup.Result{}, ctx.Err()
		}
	}
	for _, e := range evts {
		s.Deliver(ctx, e)
	}
	return catchup.Result{}, err
}

type noLocal struct{}

func (noLocal) Items(context.Context, nostr.Filter) ([]catchup.Item, error) { return nil, nil }

func newTestPool(t *testing.T, clk clock.Clock, snk Sink, cu CatchUpper, mutate func(*Options)) (*Pool, *recorder) {
	t.Helper()
	o := Options{Sink: snk, Local: noLocal{}, CatchUp: cu}
	if mutate != nil {
		mutate(&o)
	}
	p, err := New(o, env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	p.Bind(rec)
	t.Cleanup(p.Stop)
	return p, rec
}

var testKey = nostr.GeneratePrivateKey()

// signed is an event by the package's key dated at, its content unique so
// two events of one kind and date differ; testkit signs it.
func signed(t *testing.T, kind int, tags nostr.Tags, at time.Time) *nostr.Event {
	t.Helper()
	return testkit.Sign(t, testKey, &nostr.Event{Kind: kind, Tags: tags, CreatedAt: nostr.Timestamp(at.Unix()), Content: fmt.Sprint(time.Now().UnixNano())})
}

func eventFrame(sub string, e *nostr.Event) string {
	b, _ := nostr.EventEnvelope{SubscriptionID: &sub, Event: *e}.MarshalJSON()
	return string(b)
}

const repoAddr = "30617:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:repo"

func TestSubscribeOpensLiveThenCatchesUpThenReportsDone(t *testing.T) {
	ps := newPeerServer(t)
	snk := newSink()
	cu := &scriptedCatchUp{}
	clk := clock.NewFake(time.Now())
	p, rec := newTestPool(t, clk, snk, cu, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	since := nostr.Timestamp(clk.Now().Add(-time.Hour).Unix())
	p.Subscribe(ps.url, "s-1", []nostr.Filter{{Tags: nostr.TagMap{"a": {repoAddr}}, Since: &since}}, relaysync.CatchUpNegentropy)
	req := ps.expectFrame(t, `["REQ","s-1"`)
	var env nostr.ReqEnvelope
	if err := env.FromJSON(req); err != nil {
		t.Fatal(err)
	}
	f := env.Filters[0]
	if !f.LimitZero || f.Since == nil || f.Since.Time().Before(clk.Now().Add(-3*time.Minute)) {
		t.Fatalf("live filter %v: want limit 0 and since near now", f)
	}
	rec.expect(t, "done s-1")
	if len(cu.calls) != 1 || !cu.calls[0].Negentropy {
		t.Fatalf("catch-up calls %+v, want one with negentropy", cu.calls)
	}
	// a live event that matches reaches the sink as a sync event
	e := signed(t, 1621, nostr.Tags{{"a", repoAddr}}, clk.Now())
	ps.send(t, eventFrame("s-1", e))
	snk.wait(t, 1)
	if m := snk.meta[0]; m.Source != policy.SourceSync || m.Remote != ps.url {
		t.Fatalf("meta %+v", m)
	}
}

func TestInboundEventsMustMatchAnOpenSubscription(t *testing.T) {
	ps := newPeerServer(t)
	snk := newSink()
	p, rec := newTestPool(t, clock.NewFake(time.Now()), snk, &scriptedCatchUp{}, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	p.Subscribe(ps.url, "s-1", []nostr.Filter{{Tags: nostr.TagMap{"a": {repoAddr}}}}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-1"`)
	rec.expect(t, "done s-1")
	other := signed(t, 1621, nostr.Tags{{"a", "30617:bb:other"}}, time.Now())
	good := signed(t, 1621, nostr.Tags{{"a", repoAddr}}, time.Now())
	ps.send(t, eventFrame("s-1", other))      // not what we asked for
	ps.send(t, eventFrame("nope", good))      // unknown subscription
	ps.send(t, `["EVENT","s-1",{"garbage":}`) // malformed
	ps.send(t, eventFrame("s-1", good))
	snk.wait(t, 1)
	if snk.count() != 1 || snk.got[0].ID != good.ID {
		t.Fatalf("ingested %d events, want only the matching one", snk.count())
	}
}

func TestRelayClosedAndNoticeAreReported(t *testing.T) {
	ps := newPeerServer(t)
	cu := &scriptedCatchUp{block: make(chan struct{})}
	p, rec := newTestPool(t, clock.NewFake(time.Now()), newSink(), cu, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	p.Subscribe(ps.url, "s-1", []nostr.Filter{{Kinds: []int{30617}}}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-1"`)
	ps.send(t, `["CLOSED","s-1","rate-limited: slow down"]`)
	rec.expect(t, "closed s-1 rate-limited: slow down")
	ps.send(t, `["NOTICE","hello"]`)
	rec.expect(t, "notice hello")
	// the closed subscription's catch-up was stopped: no done follows
	close(cu.block)
	rec.none(t)
}

func TestFailedCatchUpClosesTheSubscription(t *testing.T) {
	ps := newPeerServer(t)
	cu := &scriptedCatchUp{err: errors.New("peer hung up")}
	p, rec := newTestPool(t, clock.NewFake(time.Now()), newSink(), cu, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	p.Subscribe(ps.url, "s-1", []nostr.Filter{{Kinds: []int{30617}}}, relaysync.CatchUpReq)
	got := rec.expect(t, "closed s-1 error: catch-up failed")
	if !strings.Contains(got, "peer hung up") {
		t.Fatalf("reason %q does not say why", got)
	}
	ps.expectFrame(t, `["CLOSE","s-1"]`)
}

func TestDroppedConnectionIsReportedButCloseIsNot(t *testing.T) {
	ps := newPeerServer(t)
	p, rec := newTestPool(t, clock.NewFake(time.Now()), newSink(), &scriptedCatchUp{}, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	<-ps.joined // the server side has registered the socket it will cut
	ps.dropAll()
	rec.expect(t, "disconnected")
	p.Connect(ps.url)
	rec.expect(t, "connected")
	p.Close(ps.url)
	// The pool's only goroutine now is the closed connection's: once it has
	// ended, any report it made is in rec.
	ended := make(chan struct{})
	go func() { p.wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-testwait.After(t):
		t.Fatal("the closed connection never ended")
	}
	rec.none(t)
	// a dial that fails is reported
	p.Connect("ws://127.0.0.1:1")
	rec.expect(t, "disconnected")
}

// The per-relay cap paces a flood on the injected clock: with a burst of 3
// and 1 event/s, the fourth event waits until a second has passed.
func TestInboundRateCapPacesAFloodingRelay(t *testing.T) {
	ps := newPeerServer(t)
	snk := newSink()
	clk := clock.NewFake(time.Now())
	p, rec := newTestPool(t, clk, snk, &scriptedCatchUp{}, func(o *Options) { o.EventsPerSecond, o.Burst = 1, 3 })
	p.Connect(ps.url)
	rec.expect(t, "connected")
	p.Subscribe(ps.url, "s-1", []nostr.Filter{{Kinds: []int{1621}}}, relaysync.CatchUpReq)
	ps.expectFrame(t, `["REQ","s-1"`)
	rec.expect(t, "done s-1")
	// the connection's own timers (its ping ticker) are armed already: an
	// event waiting on the rate cap arms one more
	armed := clk.Pending()
	waiting := func(which string) {
		t.Helper()
		if !clk.BlockUntil(armed+1, testwait.Limit(t)) {
			t.Fatalf("the %s event is not waiting on the clock", which)
		}
	}
	for i := 0; i < 5; i++ {
		ps.send(t, eventFrame("s-1", signed(t, 1621, nil, clk.Now())))
	}
	snk.wait(t, 3)
	waiting("fourth")
	if n := snk.count(); n != 3 {
		t.Fatalf("%d events through before the clock moved, want 3", n)
	}
	clk.Advance(time.Second)
	snk.wait(t, 4)
	// advanced before the fifth's wait is armed, the clock would leave it
	// waiting for good
	waiting("fifth")
	clk.Advance(time.Second)
	snk.wait(t, 5)
}

// Gap detection: an event created while a matching live window was open,
// found later by a catch-up, is a gap; one created before is history.
func TestCatchUpFindingWhatLiveShouldHaveBroughtIsAGap(t *testing.T) {
	ps := newPeerServer(t)
	start := time.Now()
	clk := clock.NewFake(start)
	cu := &scriptedCatchUp{}
	p, rec := newTestPool(t, clk, newSink(), cu, nil)
	p.Connect(ps.url)
	rec.expect(t, "connected")
	f := nostr.Filter{Tags: nostr.TagMap{"a": {repoAddr}}}
	p.Subscribe(ps.url, "s-1", []nostr.Filter{f}, relaysync.CatchUpReq)
	rec.expect(t, "done s-1")
	clk.Advance(10 * time.Minute)
	missed := signed(t, 1621, nostr.Tags{{"a", repoAddr}}, start.Add(5*time.Minute))
	old := signed(t, 1621, nostr.Tags{{"a", repoAddr}}, start.Add(-time.Hour))
	cu.mu.Lock()
	cu.evts = []*nostr.Event{missed, old}
	cu.mu.Unlock()
	since := nostr.Timestamp(start.Add(-2 * time.Hour).Unix())
	f.Since = &since
	p.Subscribe(ps.url, "s-2", []nostr.Filter{f}, relaysync.CatchUpReq)
	rec.expect(t, "done s-2")
	if got := counter(t, p.m.gaps.WithLabelValues(gapCatchUp)); got != 1 {
		t.Fatalf("gap events %v, want 1", got)
	}
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
