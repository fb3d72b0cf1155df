// Package conn owns GRASP-02's relay connections: one websocket per peer
// relay URL, each owned by one goroutine, implementing relaysync.Conns for the
// manager. A subscription opens a live REQ at once and then catches up on the
// filter's history through core/relaysync/catchup (negentropy first, REQ paging as
// the fallback), so nothing published meanwhile falls between the two; the
// manager hears SubscriptionDone when the history is in.
//
// Everything a peer sends is untrusted. Frames are size-capped, events must
// match the subscription they arrive on, and every event goes to the Sink
// (the relay's Ingest: id, signature and the full acceptance pipeline) at no
// more than a per-relay rate, through bounded queues: a flooding peer is
// slowed down, never buffered without limit. The package never decides what
// is acceptable, never writes to the store itself and never blocks the
// manager: every relaysync.Conns method only queues work.
package conn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
)

// Reporter receives what happens on the connections; *relaysync.Manager
// implements it. Calls come from connection goroutines, never while the pool
// holds a lock, so a Reporter may block briefly.
type Reporter interface {
	Connected(url string)
	Disconnected(url string, err error)
	SubscriptionDone(url, subID string)
	SubscriptionClosed(url, subID, reason string)
	Notice(url, msg string)
	// Role says why url is synced (bootstrap, repository or outbox relay)
	// and its daily event bound; it is called per event, so it must not
	// block.
	Role(url string) relaysync.RelayRole
}

// Sink takes an event from a peer through the same checks and pipeline as a
// client EVENT; ok and msg are what an OK would carry. *relay.Server's
// Ingest has this signature.
type Sink interface {
	Ingest(ctx context.Context, evt *nostr.Event, meta policy.Meta) (ok bool, msg string)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, evt *nostr.Event, meta policy.Meta) (bool, string)

func (f SinkFunc) Ingest(ctx context.Context, evt *nostr.Event, meta policy.Meta) (bool, string) {
	return f(ctx, evt, meta)
}

// Accepter is a Sink that answers with the outcome as a type (*relay.Server's
// Accept): the pool counts held, duplicate and stored events by it. A Sink
// that is not an Accepter is counted stored or rejected by its ok alone.
type Accepter interface {
	Accept(ctx context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result
}

// CatchUpper fetches a filter's history from a peer; *catchup.Client
// implements it.
type CatchUpper interface {
	CatchUp(ctx context.Context, url string, filter nostr.Filter, local catchup.Local, sink catchup.Sink, opts catchup.Options) (catchup.Result, error)
}

// Dialer opens a websocket to a relay URL.
type Dialer func(ctx context.Context, url string) (*websocket.Conn, error)

// HTTPDialer returns a Dialer whose handshakes go through client (nil: the
// default client), e.g. one whose connections refuse internal addresses.
// The pool sets each connection's read limit (Limits.MaxPeerMessageBytes).
func HTTPDialer(client *http.Client) Dialer {
	return func(ctx context.Context, url string) (*websocket.Conn, error) {
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
			HTTPClient: client,
			HTTPHeader: http.Header{"User-Agent": {"grasp-sync"}},
		})
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return c, err
	}
}

// Options configure a Pool. Zero values take the defaults noted.
type Options struct {
	// Limits bound what a peer may send: MaxPeerMessageBytes per frame.
	// Zero fields take config's defaults.
	Limits config.Limits
	Sink   Sink          // required: where events go (relay.Ingest)
	Local  catchup.Local // required: what we hold, for negentropy
	// CatchUp runs history catch-ups; nil builds a catchup.Client with this
	// pool's env and limits.
	CatchUp CatchUpper
	// CatchUpOptions tune each catch-up; Negentropy is set per subscription
	// from the manager's CatchUp mode.
	CatchUpOptions catchup.Options
	Dial           Dialer        // nil: HTTPDialer(nil)
	DialTimeout    time.Duration // default 10s
	PingInterval   time.Duration // default 29s; three failed pings close the socket
	WriteTimeout   time.Duration // per frame, default 10s
	// EventsPerSecond and Burst cap what one relay delivers, live and
	// catch-up together; defaults 500/s and 2,000.
	EventsPerSecond float64
	Burst           int
	// QueueBytes bounds the live events read but not yet ingested per
	// relay; a peer that gets this far ahead is disconnected (and caught up
	// with on reconnect). Default 8 MiB.
	QueueBytes int
	// CatchUpsPerRelay and MaxCatchUps bound concurrent catch-up sessions
	// (each its own websocket); defaults 2 and 16.
	CatchUpsPerRelay int
	MaxCatchUps      int
	// LiveSlack is how far before now a live subscription's since starts, so
	// an event whose created_at is a little behind the peer's clock still
	// matches; the history before it is the catch-up's. Default 2m.
	LiveSlack time.Duration
	// GapGrace is how long after its created_at an event may still be on
	// its way live before catch-up finding it counts as a gap. Default 1m.
	GapGrace time.Duration
	// NoticesPerMinute caps NOTICEs passed on per relay; default 30.
	NoticesPerMinute int
}

func (o *Options) defaults() error {
	if o.Sink == nil {
		return errors.New("conn options: Sink is required")
	}
	if o.Local == nil {
		return errors.New("conn options: Local is required")
	}
	if o.Dial == nil {
		o.Dial = HTTPDialer(nil)
	}
	o.Limits = o.Limits.WithDefaults()
	dur := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	dur(&o.DialTimeout, 10*time.Second)
	dur(&o.PingInterval, 29*time.Second)
	dur(&o.WriteTimeout, 10*time.Second)
	dur(&o.LiveSlack, 2*time.Minute)
	dur(&o.GapGrace, time.Minute)
	if o.EventsPerSecond <= 0 {
		o.EventsPerSecond = 500
	}
	if o.Burst <= 0 {
		o.Burst = 2000
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = 8 << 20
	}
	if o.CatchUpsPerRelay <= 0 {
		o.CatchUpsPerRelay = 2
	}
	if o.MaxCatchUps <= 0 {
		o.MaxCatchUps = 16
	}
	if o.NoticesPerMinute <= 0 {
		o.NoticesPerMinute = 30
	}
	return nil
}

// Pool is the connection layer: it implements relaysync.Conns. Bind the Reporter
// (the manager) before the manager runs.
type Pool struct {
	o       Options
	clk     clock.Clock
	log     hclog.Logger
	m       *metrics
	catchUp CatchUpper
	slots   chan struct{} // global catch-up sessions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	rep     Reporter
	relays  map[string]*relay
	peers   map[string]*peer // outlives reconnects: rate cap and gap memory
	stopped bool

	daily dailyCounts // events per relay today, for RelayRole.EventsPerDay
}

// New builds a Pool; e's logger is named "conn" for the pool's own logs.
func New(opts Options, e env.Env) (*Pool, error) {
	e = e.OrDefaults()
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	m, err := newMetrics(e.Metrics)
	if err != nil {
		return nil, fmt.Errorf("register sync connection metrics: %w", err)
	}
	p := &Pool{
		o: opts, clk: e.Clock, log: e.Log.Named("conn"), m: m, catchUp: opts.CatchUp,
		slots: make(chan struct{}, opts.MaxCatchUps), relays: map[string]*relay{}, peers: map[string]*peer{},
		daily: dailyCounts{n: map[string]int{}},
	}
	if p.catchUp == nil {
		c, err := catchup.New(catchup.Config{Limits: opts.Limits}, e.Named("catchup"))
		if err != nil {
			return nil, err
		}
		p.catchUp = c
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Bind sets the Reporter. Call it once, before the manager runs.
func (p *Pool) Bind(r Reporter) {
	p.mu.Lock()
	p.rep = r
	p.mu.Unlock()
}

// Stop closes every connection and waits for the pool's goroutines, so no
// event reaches the Sink after it returns. Nothing is reported.
func (p *Pool) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

var _ relaysync.Conns = (*Pool)(nil)

// Connect opens a websocket to url in the background and reports Connected
// or Disconnected. A Connect for a URL that is already connecting or
// connected is ignored.
func (p *Pool) Connect(url string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.relays[url] != nil {
		return
	}
	pe := p.peers[url]
	if pe == nil {
		pe = newPeer(p.clk, p.o)
		p.peers[url] = pe
	}
	r := newRelay(p, url, pe)
	p.relays[url] = r
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		r.run()
	}()
}

// Subscribe queues subscription subID on url's connection: a live REQ now,
// then a catch-up of the filters' history, then SubscriptionDone.
func (p *Pool) Subscribe(url, subID string, filters []nostr.Filter, mode relaysync.CatchUp) {
	if r := p.relay(url); r != nil {
		r.enqueue(command{op: opSubscribe, id: subID, filters: filters, mode: mode})
	}
}

// Unsubscribe queues a CLOSE for subID and stops its catch-up.
func (p *Pool) Unsubscribe(url, subID string) {
	if r := p.relay(url); r != nil {
		r.enqueue(command{op: opUnsubscribe, id: subID})
	}
}

// Close drops the connection to url without reporting Disconnected and
// forgets the peer's history.
func (p *Pool) Close(url string) {
	p.mu.Lock()
	r := p.relays[url]
	delete(p.relays, url)
	delete(p.peers, url)
	p.mu.Unlock()
	if r != nil {
		r.shut(errClosedByUs)
	}
}

func (p *Pool) relay(url string) *relay {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.relays[url]
}

// forget removes r from the pool if it is still the connection for its URL,
// and reports whether it was (only then may its end be reported).
func (p *Pool) forget(r *relay) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.relays[r.url] != r {
		return false
	}
	delete(p.relays, r.url)
	return !p.stopped
}

// role is the Reporter's RelayRole of url; without a Reporter, a
// repository relay.
func (p *Pool) role(url string) relaysync.RelayRole {
	if rep := p.reporter(); rep != nil {
		return rep.Role(url)
	}
	return relaysync.RelayRole{Source: relaysync.SourceRepo}
}

func (p *Pool) reporter() Reporter {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rep
}

// report runs f with the reporter if r is still the pool's connection
// for its URL: a connection replaced or closed by the manager must not speak
// for its successor.
func (p *Pool) report(r *relay, f func(Reporter)) {
	p.mu.Lock()
	ok := p.relays[r.url] == r && !p.stopped && p.rep != nil
	rep := p.rep
	p.mu.Unlock()
	if ok {
		f(rep)
	}
}

var errClosedByUs = errors.New("closed by the sync manager")
