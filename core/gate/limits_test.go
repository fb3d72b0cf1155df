package gate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/testwait"
)

func closedReason(t *testing.T, v []any, subid string) string {
	t.Helper()
	if len(v) != 3 || v[0] != "CLOSED" || v[1] != subid {
		t.Fatalf("got %v, want CLOSED for %q", v, subid)
	}
	return v[2].(string)
}

func TestLimits_TooManySubscriptions(t *testing.T) {
	e := newEnv(t, config.Limits{MaxSubscriptions: 3})
	c := e.dial()
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("s%d", i)
		c.sendJSON("REQ", id, map[string]any{"kinds": []int{1}})
		if v := c.expect("EOSE"); v[1] != id {
			t.Fatalf("got %v", v)
		}
	}
	// Re-using an open id replaces that subscription and is not counted.
	c.sendJSON("REQ", "s0", map[string]any{"kinds": []int{2}})
	if v := c.expect("EOSE"); v[1] != "s0" {
		t.Fatalf("got %v", v)
	}
	c.sendJSON("REQ", "s3", map[string]any{"kinds": []int{1}})
	if r := closedReason(t, c.read(), "s3"); !strings.HasPrefix(r, "blocked:") {
		t.Fatalf("reason %q, want blocked:", r)
	}
	c.sendJSON("CLOSE", "s1")
	c.sendJSON("REQ", "s3", map[string]any{"kinds": []int{1}})
	if v := c.expect("EOSE"); v[1] != "s3" {
		t.Fatalf("after CLOSE: got %v, want EOSE for s3", v)
	}
	if got := e.counter("grasp_gate_limit_rejections_total", "kind", "subscriptions"); got != 1 {
		t.Fatalf("%v subscription rejections counted, want 1", got)
	}
}

// A REQ refused with CLOSED takes no slot of the subscription limit.
func TestLimits_RefusedReqTakesNoSlot(t *testing.T) {
	e := newEnv(t, config.Limits{MaxSubscriptions: 1})
	c := e.dial()
	for i := 0; i < 3; i++ {
		c.sendJSON("REQ", "r", map[string]any{"search": "x"})
		if r := closedReason(t, c.read(), "r"); !strings.HasPrefix(r, "blocked:") {
			t.Fatalf("reason %q", r)
		}
		c.sendJSON("REQ", fmt.Sprintf("x%d", i), map[string]any{"ids": []string{"abcd"}})
		if r := closedReason(t, c.read(), fmt.Sprintf("x%d", i)); !strings.HasPrefix(r, "invalid:") {
			t.Fatalf("reason %q", r)
		}
	}
	c.reqWorks()
}

func TestLimits_SubIDTooLong(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	long := strings.Repeat("a", 65)
	c.sendJSON("REQ", long, map[string]any{"kinds": []int{1}})
	if r := closedReason(t, c.read(), long); !strings.HasPrefix(r, "invalid:") {
		t.Fatalf("reason %q, want invalid:", r)
	}
	ok := strings.Repeat("a", 64)
	c.sendJSON("REQ", ok, map[string]any{"kinds": []int{1}})
	if v := c.expect("EOSE"); v[1] != ok {
		t.Fatalf("a 64-character id: got %v", v)
	}
}

func TestLimits_TooManyFilters(t *testing.T) {
	e := newEnv(t, config.Limits{MaxFiltersPerReq: 2})
	c := e.dial()
	f := map[string]any{"kinds": []int{1}}
	c.sendJSON("REQ", "ok", f, f)
	if v := c.expect("EOSE"); v[1] != "ok" {
		t.Fatalf("got %v", v)
	}
	// The refused REQ re-uses an open id: that subscription is closed too.
	c.sendJSON("REQ", "ok", f, f, f)
	if r := closedReason(t, c.read(), "ok"); !strings.HasPrefix(r, "blocked:") {
		t.Fatalf("reason %q, want blocked:", r)
	}
	if n := e.gateConn(t).openSubscriptions(); n != 0 {
		t.Fatalf("%d subscriptions counted open, want 0", n)
	}
	c.sendJSON("COUNT", "n", f, f, f)
	if r := closedReason(t, c.read(), "n"); !strings.HasPrefix(r, "blocked:") {
		t.Fatalf("COUNT: reason %q, want blocked:", r)
	}
}

// gateConn returns the only live gate connection.
func (e *testEnv) gateConn(t *testing.T) *conn {
	t.Helper()
	found := e.gate.snapshot()
	if len(found) != 1 {
		t.Fatalf("%d gate connections, want 1", len(found))
	}
	return found[0]
}

func TestLimits_OversizedFrameCloses1009(t *testing.T) {
	e := newEnv(t, config.Limits{MaxMessageBytes: 1024})
	c := e.dial()
	c.send(`["REQ","x",{"search":"` + strings.Repeat("a", 2000) + `"}]`)
	c.conn.SetReadDeadline(testwait.Deadline(t))
	_, _, err := c.conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("got %v, want close 1009", err)
	}
	// Others are unaffected.
	e.dial().reqWorks()
}

// A client that never reads is disconnected once live events take its queue
// past the cap (live events cannot wait: they come from other clients'
// writes), the queue never holds more than the cap, and another client
// keeps working.
func TestLimits_SlowReaderDisconnected(t *testing.T) {
	const limit = 256 << 10
	e := newEnv(t, config.Limits{MaxPendingOutboundBytes: limit})
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		return conn, err
	}}
	slow, _, err := d.Dial(e.url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer slow.Close()
	if err := slow.WriteMessage(websocket.TextMessage, []byte(`["REQ","live",{"kinds":[1],"limit":0}]`)); err != nil {
		t.Fatalf("write: %v", err)
	}
	slow.SetReadDeadline(testwait.Deadline(t))
	if _, msg, err := slow.ReadMessage(); err != nil || !strings.HasPrefix(string(msg), `["EOSE"`) {
		t.Fatalf("no EOSE for the live subscription: %s %v", msg, err)
	}
	other := e.dial()
	big := strings.Repeat("x", 60_000)
	for i := 0; i < 400 && e.counter("grasp_gate_slow_reader_disconnects_total") == 0; i++ { // up to 24 MB
		evt := fakeEvent(1_700_000_000 + int64(i))
		evt.Content = big
		e.gate.Broadcast(evt)
	}
	if e.counter("grasp_gate_slow_reader_disconnects_total") == 0 {
		t.Fatal("a client that reads nothing survived 24 MB of live events")
	}
	other.reqWorks()
	if got := e.counter("grasp_gate_connections"); got != 1 {
		t.Fatalf("%v connections open, want only the other client", got)
	}
}

func TestLimits_SilentClientTimesOut(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEnvWith(t, Options{Limits: config.Limits{PingInterval: config.Duration(30 * time.Second), ClientTimeout: config.Duration(60 * time.Second)}}, fake)
	c := e.dial()
	c.conn.SetPingHandler(func(string) error { return nil }) // never pong
	c.reqWorks()
	if !fake.BlockUntil(1, testwait.Limit(t)) {
		t.Fatalf("keepalive ticker never armed")
	}
	// One reader waits for the close: after a read deadline passes the
	// websocket library fails every later read at once, so the test must
	// not poll with deadlines.
	closed := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.conn.ReadMessage(); err != nil {
				closed <- err
				return
			}
		}
	}()
	fake.Advance(90 * time.Second)
	// A tick taken while Advance was still moving the clock may have seen
	// less idle time; later ticks see all of it.
	testwait.Stepping(t, "the silent connection closed", func() { fake.Advance(30 * time.Second) }, func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	})
	if got := e.counter("grasp_gate_limit_rejections_total", "kind", "client_timeout"); got != 1 {
		t.Fatalf("%v timeouts counted, want 1", got)
	}
}

// A client that answers pings stays connected however long it idles.
func TestLimits_PongKeepsClientAlive(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	e := newEnvWith(t, Options{Limits: config.Limits{PingInterval: config.Duration(30 * time.Second), ClientTimeout: config.Duration(60 * time.Second)}}, fake)
	c := e.dial()
	c.reqWorks()
	gc := e.gateConn(t)
	go func() {
		for { // reading runs the default ping handler, which answers pong
			if _, _, err := c.conn.NextReader(); err != nil {
				return
			}
		}
	}()
	if !fake.BlockUntil(1, testwait.Limit(t)) {
		t.Fatalf("keepalive ticker never armed")
	}
	for i := 0; i < 5; i++ {
		fake.Advance(30 * time.Second)
		want := fake.Now().UnixNano()
		testwait.For(t, fmt.Sprintf("the pong for tick %d recorded", i), func() bool { return gc.lastSeen.Load() == want })
	}
	if got := e.counter("grasp_gate_connections"); got != 1 {
		t.Fatalf("%v connections after 150s of pinged idling, want 1", got)
	}
}

// REQ/CLOSE churn (relays.md §5 group 6) never leaks a slot in the count.
func TestLimits_ReqCloseChurn(t *testing.T) {
	e := newEnv(t, config.Limits{MaxSubscriptions: 5})
	c := e.dial()
	for i := 0; i < 500; i++ {
		id := fmt.Sprintf("churn%d", i%7)
		c.sendJSON("REQ", id, map[string]any{"kinds": []int{1}, "limit": 1})
		c.sendJSON("CLOSE", id)
	}
	c.reqWorks()
	c.send(`["PING"]`) // answered by the gate's reader after every earlier frame
	c.expect("NOTICE")
	if n := e.gateConn(t).openSubscriptions(); n != 0 {
		t.Fatalf("%d subscriptions counted open after churn, want 0", n)
	}
	if got := e.counter("grasp_gate_limit_rejections_total", "kind", "subscriptions"); got != 0 {
		t.Fatalf("%v subscription rejections during churn, want 0", got)
	}
}

// Stored results wait for the client instead of overflowing its queue: a
// client that reads a result far larger than the queue limit gets all of
// it, and is not dropped as a slow reader (large patches make such results
// common).
func TestLimits_LargeResultPacedForAReadingClient(t *testing.T) {
	const limit = 256 << 10
	e := newEnv(t, config.Limits{MaxPendingOutboundBytes: limit})
	big := strings.Repeat("x", 60_000)
	for i := 0; i < 100; i++ { // 6 MB, 24 times the queue limit
		evt := fakeEvent(1_700_000_000 + int64(i))
		evt.Content = big
		e.store.SaveEvent(context.Background(), evt)
	}
	c := e.dial()
	c.sendJSON("REQ", "all", map[string]any{"kinds": []int{1}, "limit": 500})
	n := 0
	for {
		v := c.read()
		if v[0] == "EOSE" {
			break
		}
		if v[0] != "EVENT" {
			t.Fatalf("got %v", v[0])
		}
		n++
	}
	if n != 100 {
		t.Fatalf("got %d events, want 100", n)
	}
	if got := e.counter("grasp_gate_slow_reader_disconnects_total"); got != 0 {
		t.Fatalf("%v slow-reader disconnects of a reading client", got)
	}
	if peak := e.gateConn(t).out.peakBytes(); peak > limit {
		t.Fatalf("queue peaked at %d bytes, over its limit %d", peak, limit)
	}
}
