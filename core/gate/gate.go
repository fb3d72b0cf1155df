// Package gate owns grasp's websocket front door: it is the one websocket of
// every client, speaks NIP-01 (EVENT, REQ, CLOSE, COUNT), NIP-42 (AUTH) and
// NIP-77 (NEG-*) on it, and owns what each connection may cost: message
// size, subscriptions, subscription ids, filters per request and the shape
// of each filter (the one place these limits are enforced), the outbound
// queue with its slow-reader rule, keepalive, negentropy sessions, and live
// delivery to subscriptions (Broadcast).
//
// GRASP-08's reader rule is not the gate's: Options.Private (core/visibility)
// decides who may see or write what, and the gate applies it to every verb
// and to live delivery (private.go).
//
// The gate never judges events: an EVENT goes to the Backend (the relay),
// whose answer is the OK the client gets, and the event store decides how
// many events a query returns. One connection's failure never touches
// another, and nothing a client does blocks another client.
//
// # Why the gate serves the websocket itself (the khatru bridge, measured)
//
// Until issue 9 the gate bridged each client, frame by frame, to a second
// in-memory websocket (net.Pipe) into khatru v0.19.1's HandleWebsocket. The
// bridge benchmarks compare grasp with bare khatru on the same store in the
// same run (CPU is process CPU per operation, alternated in rounds of 100):
//
//	go test -run '^$' -bench Bridge -benchtime 3000x ./core/relay/
//
//	grasp / bare khatru            before (bridge)        after (this package)
//	EVENT round trip, CPU          1.00-1.04x             1.01x
//	EVENT round trip, allocations  261 vs 215 (1.21x)     213 vs 215 (0.99x)
//	REQ 20 events+EOSE+CLOSE, CPU  1.15-1.24x             0.81x
//	REQ, allocations               741 vs 678 (1.09x)     671 vs 678 (0.99x)
//	idle connection, heap+stack    54-63 KB vs 17.5 KB    8-13 KB vs 18 KB
//	idle connection, goroutines    6 vs 2                 2 vs 2
//
// An EVENT costs ~350-430 us of CPU either way: signature check and store
// write dominate, so the bridge's per-event cost was within the noise.
// Its cost per REQ frame (~3 us, ~2.4 allocations) and per connection (a
// second websocket, net.Pipe, four more goroutines) was the second
// websocket's.
//
// The second websocket was the main cost of the bridge, and it could not
// be thinned away while khatru owned a socket: khatru v0.19.1 cannot answer
// OK true with a message (purgatory, duplicate), answers NIP-77 with
// NEG-ERROR and replies before storing the session (a race), writes to
// clients synchronously without any bound (a slow reader stalls its
// goroutines), and keeps its listener list without a lock when
// broadcasting. So the protocol loop is here, in this package only (and
// since issue 28 the write path is core/relay's own too; see package relay).
package gate

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/refusals"
)

// maxFrameDepth bounds JSON nesting in client frames. A NIP-01 message needs
// four levels (message, event, tags, tag); the limit keeps hostile nesting
// away from the JSON decoder.
const maxFrameDepth = 16

// writeTimeout bounds one socket write to a client. A client that does not
// take a frame within it is disconnected as a slow reader. It is a socket
// deadline, not a timer.
const writeTimeout = 10 * time.Second

// Backend is the relay behind the gate.
type Backend interface {
	// Accept takes a client's EVENT; its result is the OK frame
	// (outcome.Result.Text writes the prefix). meta.Source is
	// policy.SourceClient.
	Accept(ctx context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result
	// Query streams stored events matching f, for REQ and (with ctx marked
	// by eventstore.SetNegentropy) NEG-OPEN.
	Query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error)
	// Count answers NIP-45 COUNT.
	Count(ctx context.Context, f nostr.Filter) (int64, error)
}

// Options configures a Gate.
type Options struct {
	// Backend receives events and answers queries; required.
	Backend Backend
	// Limits bound every connection; zero fields take config's defaults.
	Limits config.Limits
	// RelayURL is this relay's ws(s) URL, which NIP-42 AUTH events must
	// name; "" derives it from the request's Host.
	RelayURL string
	// OtherRelayURLs are the relay's further URLs (its public URL's
	// aliases: a .onion, a second name); an AUTH event naming one of them
	// names this relay too.
	OtherRelayURLs []string
	// ClientIP names a request's client for per-IP limits and the
	// pipeline's Meta.Remote (core/clientip: behind trusted proxies, the
	// client they name); nil: the socket's peer.
	ClientIP func(*http.Request) string
	// Private answers GRASP-08's who-may-read questions (private.go); nil:
	// nothing is private.
	Private Private
	// RefusalLog counts the connections refused 429 for the operator's
	// per-minute line (core/refusals); nil: not counted.
	RefusalLog *refusals.Log
}

// Gate is the websocket endpoint: an http.Handler for upgrade requests.
type Gate struct {
	opts     Options
	lim      config.Limits
	backend  Backend
	log      hclog.Logger
	clk      clock.Clock
	metrics  *metrics
	upgrader websocket.Upgrader

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	// perIP counts the connections of each client address, reserved
	// before the upgrade (audit F17); reserved counts them all.
	perIP    map[string]int
	reserved int
	// negPerIP counts each client address's negentropy sessions (F07).
	negPerIP map[string]int
	// negOpen counts negentropy sessions open (or being built) across
	// every connection: each holds an id vector of up to
	// NegentropyMaxEvents, so the total is what bounds memory.
	negOpen atomic.Int64
	// eventBytes is the relay-wide budget of EVENT bytes being handled
	// (max_inflight_event_bytes, F05); outBytes that of bytes queued to
	// clients (max_total_outbound_bytes, F06).
	eventBytes *byteBudget
	outBytes   *sharedBudget
	// subs indexes the filters of every open subscription for Broadcast.
	subs *subIndex
	// workers run the client messages' work (goWork).
	workers *workers
}

// New returns a gate in front of opts.Backend.
func New(opts Options, e env.Env) *Gate {
	e = e.OrDefaults()
	g := &Gate{
		opts:    opts,
		lim:     opts.Limits.WithDefaults(),
		backend: opts.Backend,
		log:     e.Log,
		clk:     e.Clock,
		metrics: newMetrics(e.Metrics),
		conns:   map[*conn]struct{}{},
		perIP:   map[string]int{},
		subs:    newSubIndex(),
		workers: newWorkers(),

		negPerIP: map[string]int{},
		upgrader: websocket.Upgrader{
			// khatru's read buffer size; the write buffer is taken from a
			// pool only while writing, so an idle connection holds none.
			ReadBufferSize:  1024,
			WriteBufferPool: &sync.Pool{},
			// Nostr clients connect from any web origin.
			CheckOrigin: func(*http.Request) bool { return true },
		},
	}
	g.eventBytes = newByteBudget(int64(g.lim.MaxInflightEventBytes))
	g.outBytes = &sharedBudget{limit: int64(g.lim.MaxTotalOutboundBytes)}
	return g
}

// ServeHTTP upgrades the request; the connection is served on goroutines
// of its own. A client over the connection caps is answered 429 before
// the upgrade, so a refused connection costs no goroutine (audit F17).
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ip := g.remoteAddr(r)
	if refusal := g.reserve(ip); refusal != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Retry-After", "10")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(refusal + "\n")) //nolint:errcheck // the client may be gone
		return
	}
	ws, err := g.upgrader.Upgrade(w, r, nil)
	if err != nil {
		g.unreserve(ip)
		return // the upgrader has answered the client with the reason
	}
	c := newConn(g, ip, r, ws)
	if !g.add(c) {
		g.unreserve(ip)
		msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "relay shutting down")
		ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)) //nolint:errcheck // best effort before closing
		ws.Close()
		return
	}
	c.start()
}

func (g *Gate) add(c *conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *Gate) remove(c *conn) {
	g.mu.Lock()
	_, ok := g.conns[c]
	delete(g.conns, c)
	g.mu.Unlock()
	if ok {
		g.unreserve(c.remote)
	}
}

// reserve counts a connection of ip against max_connections and
// max_connections_per_ip, or says why it is refused.
func (g *Gate) reserve(ip string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.reserved >= g.lim.MaxConnections:
		g.metrics.limit("connections_total")
		g.opts.RefusalLog.Count(ip, refusals.Connections)
		return fmt.Sprintf("rate-limited: this relay has its maximum of %d connections open; try again later", g.lim.MaxConnections)
	case g.perIP[ip] >= g.lim.MaxConnectionsPerIP:
		g.metrics.limit("connections_ip")
		g.opts.RefusalLog.Count(ip, refusals.ConnectionsIP)
		return fmt.Sprintf("rate-limited: %d connections from your address are already open here (limit %d); close some or try again later", g.perIP[ip], g.lim.MaxConnectionsPerIP)
	}
	g.reserved++
	g.perIP[ip]++
	return ""
}

func (g *Gate) unreserve(ip string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reserved--
	if g.perIP[ip]--; g.perIP[ip] <= 0 {
		delete(g.perIP, ip)
	}
}

func (g *Gate) snapshot() []*conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		out = append(out, c)
	}
	return out
}

// Close disconnects every client with close code 1001 (going away) and
// refuses new ones. http.Server.Shutdown does not track hijacked
// connections, so the relay calls this after Shutdown returns.
func (g *Gate) Close() {
	g.mu.Lock()
	already := g.closed
	g.closed = true
	g.mu.Unlock()
	if !already {
		g.workers.close()
	}
	for _, c := range g.snapshot() {
		msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "relay shutting down")
		c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)) //nolint:errcheck // best effort before closing
		c.shutdown("gate closed")
	}
}

// Subscriptions reports the REQ subscriptions open on every connection.
func (g *Gate) Subscriptions() int {
	n := 0
	for _, c := range g.snapshot() {
		n += c.openSubscriptions()
	}
	return n
}

// remoteAddr is the client's IP as Options.ClientIP names it.
func (g *Gate) remoteAddr(r *http.Request) string {
	if g.opts.ClientIP != nil {
		return g.opts.ClientIP(r)
	}
	return clientip.Peer(r)
}

// relayURL is the URL NIP-42 AUTH events must name.
func (g *Gate) relayURL(r *http.Request) string {
	if g.opts.RelayURL != "" {
		return g.opts.RelayURL
	}
	scheme := "ws://"
	if r.TLS != nil {
		scheme = "wss://"
	}
	return scheme + r.Host
}
