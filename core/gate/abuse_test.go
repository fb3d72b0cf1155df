package gate

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/negindex"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// behindProxy serves a gate that trusts 127.0.0.1 as a proxy, so a test
// can speak as several client addresses through X-Forwarded-For.
func behindProxy(t *testing.T, lim config.Limits) *testEnv {
	t.Helper()
	proxy, err := clientip.Parse([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvWith(t, Options{Limits: lim, ClientIP: proxy.Of}, nil)
}

// dialAs connects as client address ip; a refused upgrade returns the
// HTTP status and body instead.
func (e *testEnv) dialAs(ip string) (*rawClient, int, string) {
	e.t.Helper()
	h := http.Header{"X-Forwarded-For": {ip}}
	c, resp, err := websocket.DefaultDialer.Dial(e.url, h)
	if err != nil {
		if resp == nil {
			e.t.Fatalf("dial as %s: %v", ip, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, resp.StatusCode, string(body)
	}
	e.t.Cleanup(func() { c.Close() })
	return &rawClient{t: e.t, conn: c}, http.StatusSwitchingProtocols, ""
}

// TestAbuse_F17_ConnectionCapsAnswer429: one address cannot open more than
// max_connections_per_ip websockets, nor everyone together more than
// max_connections; the refusal is a readable 429 before any upgrade, other
// addresses still connect, and a closed connection frees its slot.
func TestAbuse_F17_ConnectionCapsAnswer429(t *testing.T) {
	e := behindProxy(t, config.Limits{MaxConnectionsPerIP: 3, MaxConnections: 5})
	var mine []*rawClient
	for i := 0; i < 3; i++ {
		c, code, body := e.dialAs("203.0.113.1")
		if c == nil {
			t.Fatalf("connection %d within the per-address cap refused: %d %s", i+1, code, body)
		}
		mine = append(mine, c)
	}
	_, code, body := e.dialAs("203.0.113.1")
	if code != http.StatusTooManyRequests || !strings.HasPrefix(body, "rate-limited: 3 connections from your address") {
		t.Fatalf("4th connection from one address: %d %q, want 429 rate-limited", code, body)
	}
	// positive control: another address is not affected
	other, code, body := e.dialAs("203.0.113.2")
	if other == nil {
		t.Fatalf("another address refused: %d %s", code, body)
	}
	other.reqWorks()
	if _, code, _ := e.dialAs("203.0.113.3"); code != http.StatusSwitchingProtocols {
		t.Fatalf("5th connection relay-wide refused: %d", code)
	}
	_, code, body = e.dialAs("203.0.113.4")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "maximum of 5 connections") {
		t.Fatalf("6th connection relay-wide: %d %q, want 429", code, body)
	}
	if got := e.counter("grasp_gate_limit_rejections_total", "kind", "connections_ip"); got != 1 {
		t.Fatalf("connections_ip refusals counted %v, want 1", got)
	}
	// a closed connection gives its slot back
	mine[0].conn.Close()
	testwait.For(t, "the closed connection's slot is free", func() bool {
		c, _, _ := e.dialAs("203.0.113.1")
		if c != nil {
			c.conn.Close()
			return true
		}
		return false
	})
	mine[1].reqWorks()
}

// TestAbuse_F18b_SpoofedForwardedForIsIgnored: straight to the gate (no
// trusted proxy), X-Forwarded-For cannot make one client look like many,
// so the per-address cap holds whatever the header says.
func TestAbuse_F18b_SpoofedForwardedForIsIgnored(t *testing.T) {
	e := newEnv(t, config.Limits{MaxConnectionsPerIP: 2, MaxConnections: 100})
	for i := 0; i < 2; i++ {
		if c, code, body := e.dialAs("198.51.100." + string(rune('1'+i))); c == nil {
			t.Fatalf("connection %d refused: %d %s", i+1, code, body)
		}
	}
	_, code, body := e.dialAs("198.51.100.9")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "from your address") {
		t.Fatalf("a third address claimed in X-Forwarded-For got %d %q, want the peer's cap (429)", code, body)
	}
}

// TestAbuse_F07_NegentropySessionsPerAddress: one address cannot hold
// the relay's negentropy sessions over several connections; another
// address still opens one.
func TestAbuse_F07_NegentropySessionsPerAddress(t *testing.T) {
	e := behindProxy(t, config.Limits{NegentropyMaxSessions: 10, NegentropySessionsPerConn: 4, NegentropySessionsPerIP: 2})
	for i := 0; i < 20; i++ {
		e.store.SaveEvent(context.Background(), fakeEvent(1_700_000_000+int64(i)))
	}
	a1, _, _ := e.dialAs("203.0.113.1")
	a2, _, _ := e.dialAs("203.0.113.1")
	a1.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
	if v := a1.read(); v[0] != "NEG-MSG" {
		t.Fatalf("first session: %v", v)
	}
	a2.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
	if v := a2.read(); v[0] != "NEG-MSG" {
		t.Fatalf("second session: %v", v)
	}
	a2.send(`["NEG-OPEN","t",{"kinds":[1]},"6100000200"]`)
	if v := a2.read(); v[0] != "NEG-ERR" || !strings.HasPrefix(v[2].(string), "blocked: too many negentropy sessions from your address") {
		t.Fatalf("third session from one address: got %v, want NEG-ERR blocked: per address", v)
	}
	b, _, _ := e.dialAs("203.0.113.2")
	b.send(`["NEG-OPEN","s",{"kinds":[1]},"6100000200"]`)
	if v := b.read(); v[0] != "NEG-MSG" {
		t.Fatalf("another address's session: %v", v)
	}
	a1.send(`["NEG-CLOSE","s"]`)
	testwait.For(t, "the closed session's slot is the address's again", func() bool {
		a2.send(`["NEG-OPEN","u",{"kinds":[1]},"6100000200"]`)
		return a2.read()[0] == "NEG-MSG"
	})
}

// TestAbuse_F05_ReaderStopsAtMaxUnanswered: a client that pipelines
// EVENTs faster than they are answered gets at most max_unanswered of
// them handled at once; the rest wait in its socket, not in goroutines,
// and every one is answered in the end. Another connection is served
// meanwhile.
func TestAbuse_F05_ReaderStopsAtMaxUnanswered(t *testing.T) {
	const unanswered, sent = 2, 12
	e := newEnv(t, config.Limits{MaxUnanswered: unanswered})
	var mu sync.Mutex
	inFlight, peak := 0, 0
	gate := make(chan struct{})
	e.backend.refuse = func(evt *nostr.Event, meta policy.Meta) string {
		if evt.Kind != 1 {
			return ""
		}
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		return ""
	}
	c := e.dial()
	sk := nostr.GeneratePrivateKey()
	for i := 0; i < sent; i++ {
		c.sendJSON("EVENT", signedEvent(t, sk, 1, "flood", 1_700_000_000+int64(i)))
	}
	testwait.For(t, "the first events reach the backend", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight >= unanswered
	})
	e.dial().reqWorks() // another client is served while this one waits
	close(gate)
	for i := 0; i < sent; i++ {
		if v := c.expect("OK"); v[2] != true {
			t.Fatalf("event %d: %v", i, v)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != unanswered {
		t.Fatalf("%d events were handled at once, want max_unanswered = %d", peak, unanswered)
	}
}

// TestAbuse_F05_EventBytesBudget: EVENT bytes in flight are bounded
// relay-wide; a frame waits for room (never refused), and a frame larger
// than the whole budget still goes once nothing else is in flight.
func TestAbuse_F05_EventBytesBudget(t *testing.T) {
	b := newByteBudget(100)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if !b.acquire(context.Background(), 60) {
		t.Fatal("first 60 bytes refused")
	}
	if b.acquire(done, 60) {
		t.Fatal("60 more bytes taken over a 100-byte budget")
	}
	if !b.acquire(context.Background(), 40) {
		t.Fatal("40 bytes within the budget refused")
	}
	got := make(chan bool)
	go func() { got <- b.acquire(context.Background(), 50) }()
	b.release(60)
	if !<-got {
		t.Fatal("a waiting frame was not let through after a release")
	}
	b.release(40)
	b.release(50)
	if !b.acquire(done, 500) {
		t.Fatal("a frame larger than the budget is refused even with nothing in flight")
	}
	if b.inUse() != 500 {
		t.Fatalf("in use %d, want 500", b.inUse())
	}
}

// TestAbuse_F06_RelayWideOutboundBudget: over max_total_outbound_bytes a
// connection that holds unread bytes takes no more stored results, and one
// holding more than the low-water mark is dropped on its next live event,
// while a connection that keeps up still gets its live events.
func TestAbuse_F06_RelayWideOutboundBudget(t *testing.T) {
	shared := &sharedBudget{limit: 2 << 20}
	hog := newOutQueue(32<<20, shared)
	reader := newOutQueue(32<<20, shared)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	big := make([]byte, 3<<20)
	if !hog.pushWait(context.Background(), big) {
		t.Fatal("a stored result into an empty queue refused")
	}
	if !shared.over() {
		t.Fatalf("3 MiB queued is not over a 2 MiB budget (used %d)", shared.used.Load())
	}
	if hog.push([]byte("live")) {
		t.Fatal("a live event was queued to a connection holding 3 MiB while the relay is over its budget")
	}
	if !reader.push([]byte("live")) {
		t.Fatal("a connection that keeps up lost a live event")
	}
	if reader.pushWait(done, []byte("stored")) {
		t.Fatal("a stored result was queued to a non-empty queue while the relay is over its budget")
	}
	// the hog is dropped (closed): its bytes leave the budget
	hog.close()
	if shared.over() || shared.used.Load() != int64(len("live")) {
		t.Fatalf("after the hog closed %d bytes are counted, want %d", shared.used.Load(), len("live"))
	}
	if !reader.pushWait(done, []byte("stored")) {
		t.Fatal("a stored result refused under the budget")
	}
	batch := reader.take()
	reader.release(batch, len("live")+len("stored"))
	if shared.used.Load() != 0 {
		t.Fatalf("written bytes still counted: %d", shared.used.Load())
	}
}

// F07: a whole-store sync (the empty filter every GRASP-02 peer and NIP-77
// client sends) is answered from the negentropy index even though the
// filter may match kind-10318 lists, which are readable by their author
// alone: only the lists are asked of the store and checked, never every
// event, and a list the client may not read is still left out of the set.
func TestAbuse_F07_WholeStoreSyncFromIndexHidesPrivateLists(t *testing.T) {
	st := newLockedStore()
	st.ix = negindex.New(nil)
	e := newEnvStore(t, Options{Private: &fakePrivate{restricting: false}}, nil, st)
	sk := nostr.GeneratePrivateKey()
	var visible []*nostr.Event
	for i := range 50 {
		evt := signedEvent(t, sk, 1, "note", 1_700_000_000+int64(i))
		visible = append(visible, &evt)
	}
	public := signedEvent(t, sk, privateListKind, "public", 1_700_000_100)
	secret := signedEvent(t, nostr.GeneratePrivateKey(), privateListKind, "secret", 1_700_000_101)
	visible = append(visible, &public)
	for _, evt := range append(visible, &secret) {
		if err := st.SaveEvent(context.Background(), evt); err != nil {
			t.Fatal(err)
		}
	}
	_, haveNots, err := clientSync(rawTransport{e.dial()}, "all", nostr.Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameSet(haveNots, ids(visible)) {
		t.Fatalf("the sync offered %d ids, want the %d visible events (the private list left out)", len(haveNots), len(visible))
	}
	e.backend.mu.Lock()
	queries := append([]nostr.Filter(nil), e.backend.queries...)
	e.backend.mu.Unlock()
	for _, f := range queries {
		if len(f.Kinds) != 1 || f.Kinds[0] != privateListKind {
			t.Fatalf("the session queried the store for %s: only the kind-%d lists may be read one by one", f, privateListKind)
		}
	}
	if len(queries) == 0 {
		t.Fatal("the lists were never checked against the reader rule")
	}
}

// F06: REQs a client sends together are served one after the other on its
// connection: while the first REQ's events wait for a client that does not
// read, the store is not asked for the others (each query's results are
// held in memory until queued). Once the client reads, every REQ is
// answered.
func TestAbuse_F06_OneStoredQueryAtATimePerConnection(t *testing.T) {
	const reqs = 4
	e := newEnv(t, config.Limits{MaxPendingOutboundBytes: 64 << 10})
	sk := nostr.GeneratePrivateKey()
	big := strings.Repeat("x", 20<<10)
	for i := range 200 { // 4 MB per REQ: more than the queue and the socket buffers hold
		evt := signedEvent(t, sk, 1, big, 1_700_000_000+int64(i))
		if err := e.store.SaveEvent(context.Background(), &evt); err != nil {
			t.Fatal(err)
		}
	}
	c := e.dial()
	for i := range reqs {
		c.sendJSON("REQ", "s"+strconv.Itoa(i), nostr.Filter{Kinds: []int{1}})
	}
	queries := func() int {
		e.backend.mu.Lock()
		defer e.backend.mu.Unlock()
		return len(e.backend.queries)
	}
	testwait.For(t, "every REQ read and the first one queried", func() bool {
		return e.counter("grasp_gate_messages_in_total") >= reqs && queries() >= 1
	})
	if n := queries(); n != 1 {
		t.Fatalf("%d stored queries run while the client reads nothing, want 1", n)
	}
	eose := 0
	for eose < reqs {
		if v := c.read(); v[0] == "EOSE" {
			eose++
		}
	}
	if n := queries(); n != reqs {
		t.Fatalf("%d stored queries after every EOSE, want %d", n, reqs)
	}
}
