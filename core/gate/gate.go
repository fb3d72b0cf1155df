// Package gate owns grasp's websocket front door. Every client websocket is
// accepted here and bridged, frame by frame, to an in-memory websocket into
// khatru, which stays the relay. The gate owns what khatru v0.19.1 lacks or
// gets wrong: per-connection limits (message size, subscriptions, subid
// length, filters per REQ, outbound queue), the NIP-77 negentropy server
// (NEG-ERR labels, no reply-before-session race), liveness pings, and OK
// messages that carry a note from the acceptance pipeline.
//
// The gate never decodes or judges events: validation, storage and
// broadcasting stay in khatru and the policy pipeline. It never blocks the
// backend on a slow client, and one connection's failure never touches
// another.
package gate

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
)

// ConnHeader carries the gate's connection id into khatru, so hooks can
// address the gate connection (NoteOK). Clients cannot set it: the gate
// removes it from every incoming request.
const ConnHeader = "X-Grasp-Gate-Conn"

// maxFrameDepth bounds JSON nesting in client frames. A NIP-01 message needs
// four levels (message, event, tags, tag); the limit keeps hostile nesting
// away from khatru's parser.
const maxFrameDepth = 16

// Options configures a Gate. Zero values take the defaults in parentheses.
type Options struct {
	// MaxMessageBytes is the largest client frame (512000, khatru's
	// default); larger frames close the connection with 1009. khatru's
	// MaxMessageSize must be at least this.
	MaxMessageBytes int64
	// MaxSubscriptions is the number of open REQ subscriptions per
	// connection (200).
	MaxSubscriptions int
	// MaxSubIDLength is the longest REQ or NEG subscription id (64, NIP-01).
	MaxSubIDLength int
	// MaxFiltersPerReq is the number of filters one REQ may carry (200).
	MaxFiltersPerReq int
	// MaxPendingOutboundBytes is how much may wait to be sent to one client
	// before it is disconnected as a slow reader (32 MiB, as strfry).
	MaxPendingOutboundBytes int
	// NegentropyMaxEvents caps the events one NEG-OPEN filter may match
	// (500000); beyond it the answer is NEG-ERR "blocked:".
	NegentropyMaxEvents int
	// NegentropyIdle closes a negentropy session left idle that long (60s).
	NegentropyIdle time.Duration
	// NegentropyFrameSize bounds one NEG-MSG reply in bytes before hex
	// encoding (500000); larger reconciliations take more rounds.
	NegentropyFrameSize int
	// MaxNegSessions bounds negentropy sessions open at once on the whole
	// relay (default 64): many connections each opening their allowance
	// must not exhaust memory.
	MaxNegSessions int
	// MaxNegSessionsPerConn bounds concurrent negentropy sessions on one
	// connection (4); each holds a vector of up to NegentropyMaxEvents ids.
	MaxNegSessionsPerConn int
	// Query answers NEG-OPEN filters; the gate marks its ctx with
	// eventstore.SetNegentropy so stores do not apply REQ limits. Nil
	// disables NIP-77: NEG-OPEN gets NEG-ERR "blocked:".
	Query func(ctx context.Context, filter nostr.Filter) (chan *nostr.Event, error)
	// NegentropyFilter, if set, may rewrite or refuse a NEG-OPEN filter, as
	// khatru's OverwriteFilter and RejectFilter do for REQs. A refusal's
	// message is sent in NEG-ERR ("blocked:" is added when unprefixed).
	NegentropyFilter func(ctx context.Context, r *http.Request, filter *nostr.Filter) error
	// PingInterval is how often the gate pings each client (30s).
	PingInterval time.Duration
	// ClientTimeout disconnects a client from which nothing, not even a
	// pong, arrived for that long (60s).
	ClientTimeout time.Duration
	// NoteTTL is how long a NoteOK note waits for its OK (30s).
	NoteTTL time.Duration
	// MaxNotesPerConn bounds pending notes per connection (1024).
	MaxNotesPerConn int
	// TrustForwarded keeps the client's X-Forwarded-For header (set it only
	// behind a reverse proxy that sets the header itself).
	TrustForwarded bool
	// WriteTimeout bounds one socket write to a client or to the backend
	// handshake (10s). It is a socket deadline, not a timer.
	WriteTimeout time.Duration

	Clock      clock.Clock
	Logger     hclog.Logger
	Registerer prometheus.Registerer
}

func (o *Options) setDefaults() {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 512000
	}
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = 200
	}
	if o.MaxSubIDLength <= 0 {
		o.MaxSubIDLength = 64
	}
	if o.MaxFiltersPerReq <= 0 {
		o.MaxFiltersPerReq = 200
	}
	if o.MaxPendingOutboundBytes <= 0 {
		o.MaxPendingOutboundBytes = 32 << 20
	}
	if o.NegentropyMaxEvents <= 0 {
		o.NegentropyMaxEvents = 500000
	}
	if o.NegentropyIdle <= 0 {
		o.NegentropyIdle = time.Minute
	}
	if o.NegentropyFrameSize < 4096 { // go-nostr's engine panics below 4096
		o.NegentropyFrameSize = 500000
	}
	if o.MaxNegSessions <= 0 {
		o.MaxNegSessions = 64
	}
	if o.MaxNegSessionsPerConn <= 0 {
		o.MaxNegSessionsPerConn = 4
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.ClientTimeout <= 0 {
		o.ClientTimeout = time.Minute
	}
	if o.NoteTTL <= 0 {
		o.NoteTTL = 30 * time.Second
	}
	if o.MaxNotesPerConn <= 0 {
		o.MaxNotesPerConn = 1024
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// Gate is an http.Handler that serves client websockets itself and passes
// every other request to the backend unchanged (minus ConnHeader).
type Gate struct {
	backend  http.Handler
	opts     Options
	log      hclog.Logger
	clk      clock.Clock
	metrics  *metrics
	upgrader websocket.Upgrader
	dialer   websocket.Dialer

	nextID atomic.Uint64
	conns  sync.Map // conn id -> *conn
	// negOpen counts negentropy sessions open (or being built) across
	// every connection: each holds an id vector of up to
	// NegentropyMaxEvents, so the total is what bounds memory.
	negOpen atomic.Int64
}

// New returns a gate in front of backend (khatru's relay, or any handler
// that upgrades websockets through http.Hijacker).
func New(backend http.Handler, opts Options) *Gate {
	opts.setDefaults()
	g := &Gate{
		backend: backend,
		opts:    opts,
		log:     opts.Logger,
		clk:     opts.Clock,
		metrics: newMetrics(opts.Registerer),
		upgrader: websocket.Upgrader{
			ReadBufferSize:  4096,
			WriteBufferSize: 4096,
			// Nostr clients connect from any web origin.
			CheckOrigin: func(*http.Request) bool { return true },
		},
	}
	g.dialer = websocket.Dialer{
		ReadBufferSize:   4096,
		WriteBufferSize:  4096,
		HandshakeTimeout: opts.WriteTimeout,
	}
	return g
}

// ServeHTTP implements http.Handler.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(ConnHeader)
	if !g.opts.TrustForwarded {
		r.Header.Del("X-Forwarded-For")
	}
	if !isWebsocketUpgrade(r) {
		g.backend.ServeHTTP(w, r)
		return
	}
	g.serveWebsocket(w, r)
}

func isWebsocketUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
				return true
			}
		}
	}
	return false
}

func (g *Gate) newConnID() string {
	return strconv.FormatUint(g.nextID.Add(1), 36)
}

// Close disconnects every client websocket with close code 1001 (going
// away). http.Server.Shutdown does not track hijacked connections, so the
// server calls this after Shutdown returns.
func (g *Gate) Close() {
	g.conns.Range(func(_, v any) bool {
		c := v.(*conn)
		msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "relay shutting down")
		c.cc.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)) //nolint:errcheck // best effort before closing
		c.shutdown("gate closed")
		return true
	})
}
