package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/eventstore"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testlog"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// A NEG-OPEN whose set takes long to build (PostgreSQL at 200,001 events,
// issue 27) keeps its connection: the client gets its NEG-MSG however long
// the build took within negentropy_open_timeout, and past that bound a
// NEG-ERR saying so, never a dropped connection without a word.

// holdingBackend holds every negentropy query until release is closed or
// the query's context ends: a store taking as long as the test wants.
type holdingBackend struct {
	*testBackend
	entered chan struct{}
	release chan struct{}
}

func (b *holdingBackend) Query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	if eventstore.IsNegentropySession(ctx) {
		select {
		case b.entered <- struct{}{}:
		default:
		}
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return b.testBackend.Query(ctx, f)
}

// slowNegEnv is a gate on the fake clock in front of a holdingBackend
// holding n events.
type slowNegEnv struct {
	*testEnv
	hb   *holdingBackend
	fake *clock.Fake
	logs *testlog.Buffer
	held []*nostr.Event
}

func newSlowNegEnv(t *testing.T, lim config.Limits, n int) *slowNegEnv {
	t.Helper()
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	logs := &testlog.Buffer{}
	st := newLockedStore()
	tb := &testBackend{store: st}
	hb := &holdingBackend{testBackend: tb, entered: make(chan struct{}, 1), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	g := New(Options{Backend: hb, Limits: lim}, env.Env{Clock: fake, Metrics: reg, Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
	tb.gate = g
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	e := &slowNegEnv{
		testEnv: &testEnv{t: t, backend: tb, store: st, gate: g, reg: reg, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http")},
		hb:      hb, fake: fake, logs: logs,
	}
	for i := range n {
		evt := fakeEvent(1_700_000_000 - int64(i))
		if err := st.SaveEvent(context.Background(), evt); err != nil {
			t.Fatal(err)
		}
		e.held = append(e.held, evt)
	}
	return e
}

// pumpedTransport reads the connection on a goroutine of its own, as a
// real client does: it answers every ping with a pong and counts the
// pings, and hands the frames to recv.
type pumpedTransport struct {
	t      *testing.T
	conn   *websocket.Conn
	frames chan []byte
	pings  chan struct{}
	// closed is closed once the connection is; err is why
	closed chan struct{}
	err    error
}

func (e *testEnv) dialPumped() *pumpedTransport {
	e.t.Helper()
	conn := e.dial().conn
	tr := &pumpedTransport{t: e.t, conn: conn, frames: make(chan []byte, 64), pings: make(chan struct{}, 64), closed: make(chan struct{})}
	conn.SetPingHandler(func(data string) error {
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(testwait.Limit(e.t)))
		tr.pings <- struct{}{}
		return err
	})
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				tr.err = err
				close(tr.closed)
				return
			}
			tr.frames <- b
		}
	}()
	return tr
}

func (tr *pumpedTransport) send(b []byte) error {
	return tr.conn.WriteMessage(websocket.TextMessage, b)
}

func (tr *pumpedTransport) recv() (nostr.Envelope, error) {
	for {
		select {
		case b := <-tr.frames:
			if env := nip77.ParseNegMessage(string(b)); env != nil {
				return env, nil
			}
		case <-tr.closed:
			return nil, fmt.Errorf("connection closed: %w", tr.err)
		case <-testwait.After(tr.t):
			return nil, errors.New("no NEG reply in time")
		}
	}
}

// pingedThrough advances the fake clock by ticks ping intervals of 30 s
// while the server holds the connection's reader (what, for the failure):
// every tick must ping the client, none drop it.
func (tr *pumpedTransport) pingedThrough(fake *clock.Fake, ticks int, what string) {
	tr.t.Helper()
	for i := 1; i <= ticks; i++ {
		fake.Advance(30 * time.Second)
		select {
		case <-tr.pings:
		case <-tr.closed:
			tr.t.Fatalf("tick %d (%ds): the connection was dropped while %s: %v", i, 30*i, what, tr.err)
		case <-testwait.After(tr.t):
			tr.t.Fatalf("tick %d: no ping", i)
		}
	}
}

// syncAsync runs clientSync on its own goroutine.
func syncAsync(tr negTransport, subid string) <-chan syncResult {
	out := make(chan syncResult, 1)
	go func() {
		var r syncResult
		r.haves, r.haveNots, r.err = clientSync(tr, subid, nostr.Filter{}, nil)
		out <- r
	}()
	return out
}

type syncResult struct {
	haves, haveNots []string
	err             error
}

func waitEntered(t *testing.T, hb *holdingBackend) {
	t.Helper()
	select {
	case <-hb.entered:
	case <-testwait.After(t):
		t.Fatal("the NEG-OPEN's query never reached the store")
	}
}

func TestR2_NegOpenBuildingItsSetLongerThanClientTimeoutKeepsTheConnection(t *testing.T) {
	e := newSlowNegEnv(t, config.Limits{
		PingInterval: config.Duration(30 * time.Second), ClientTimeout: config.Duration(60 * time.Second),
		NegentropyOpenTimeout: config.Duration(10 * time.Minute),
	}, 30)
	tr := e.dialPumped()
	res := syncAsync(tr, "slow")
	waitEntered(t, e.hb)
	if !e.fake.BlockUntil(1, testwait.Limit(t)) {
		t.Fatal("keepalive ticker never armed")
	}
	// Four ping intervals, twice client_timeout, while the set is built.
	tr.pingedThrough(e.fake, 4, "its NEG-OPEN's set was built")
	close(e.hb.release)
	r := <-res
	if r.err != nil {
		t.Fatalf("sync after a slow NEG-OPEN: %v", r.err)
	}
	if !sameSet(r.haveNots, ids(e.held)) || len(r.haves) != 0 {
		t.Fatalf("sync found %d to fetch and %d to give, want the %d held and none", len(r.haveNots), len(r.haves), len(e.held))
	}
	if got := e.counter("grasp_gate_limit_rejections_total", "kind", "client_timeout"); got != 0 {
		t.Fatalf("%v client timeouts counted, want 0", got)
	}
}

func TestR2_NegOpenPastNegentropyOpenTimeoutGetsNegErrAndIsLogged(t *testing.T) {
	e := newSlowNegEnv(t, config.Limits{
		PingInterval: config.Duration(30 * time.Second), ClientTimeout: config.Duration(60 * time.Second),
		NegentropyOpenTimeout: config.Duration(45 * time.Second),
	}, 30)
	tr := e.dialPumped()
	res := syncAsync(tr, "late")
	waitEntered(t, e.hb)
	if !e.fake.BlockUntil(2, testwait.Limit(t)) { // the keepalive ticker and the bound's timer
		t.Fatal("timers never armed")
	}
	e.fake.Advance(45 * time.Second)
	r := <-res
	want := "NEG-ERR blocked: building the set of this NEG-OPEN took longer than 45s; sync narrower filters"
	if r.err == nil || !strings.HasPrefix(r.err.Error(), want) {
		t.Fatalf("NEG-OPEN past its bound: %v, want %q", r.err, want)
	}
	if got := e.counter("grasp_gate_limit_rejections_total", "kind", "neg_open_timeout"); got != 1 {
		t.Fatalf("%v open timeouts counted, want 1", got)
	}
	if l := e.logs.String(); !strings.Contains(l, "negentropy set took too long") || !strings.Contains(l, "negentropy_open_timeout=45s") {
		t.Fatalf("no warning logged for the refused NEG-OPEN; log:\n%s", l)
	}
	// The connection goes on: the same sync succeeds once the store answers.
	close(e.hb.release)
	r = <-syncAsync(tr, "again")
	if r.err != nil || !sameSet(r.haveNots, ids(e.held)) {
		t.Fatalf("sync on the same connection after the NEG-ERR: %d to fetch, %v; want the %d held", len(r.haveNots), r.err, len(e.held))
	}
}
