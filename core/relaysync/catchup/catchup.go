// Package catchup owns the historic half of GRASP-02 event sync: one bounded
// session against one peer relay that finds the events matching a filter that
// the peer has and we lack, fetches them, verifies them and hands them to a
// Sink. It reconciles with NIP-77 negentropy (our own session loop on
// go-nostr's engine, because nip77.NegentropySync deadlocks past 64 one-sided
// differences and never closes its connection) and falls back to REQ+EOSE
// with until-pagination when the peer cannot do NIP-77.
//
// Everything a peer sends is untrusted: ids are recomputed, signatures
// checked and events matched against what was asked for before the Sink sees
// them. The package never writes to the store itself and never keeps a
// connection beyond one CatchUp call; live subscriptions belong to the sync
// manager's connection layer.
package catchup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Item is one stored event as negentropy sees it.
type Item struct {
	ID        string
	CreatedAt nostr.Timestamp
}

// Local gives the set of events we already hold for a filter. It must not be
// capped by the store's query limit (back it with eventstore.SetNegentropy,
// see StoreLocal), or the peer will resend what we have.
type Local interface {
	Items(ctx context.Context, filter nostr.Filter) ([]Item, error)
}

// Sink receives every verified event the peer has and we lacked, in arrival
// order, from the goroutine that called CatchUp. ok reports whether the event
// was accepted (stored or held); a rejection is counted, not retried.
type Sink interface {
	Deliver(ctx context.Context, evt *nostr.Event) (ok bool)
}

// Conn is one websocket to a peer. *nostr.Connection implements it.
// ReadMessage and WriteMessage are called from different goroutines.
type Conn interface {
	WriteMessage(ctx context.Context, data []byte) error
	ReadMessage(ctx context.Context, buf io.Writer) error
	Close() error
}

// Dialer opens a Conn to a relay URL.
type Dialer func(ctx context.Context, url string) (Conn, error)

// Method is how a catch-up found the missing events.
type Method string

const (
	MethodNegentropy Method = "negentropy"
	MethodReq        Method = "req"
)

// Options tune one CatchUp call. Zero values take the defaults noted.
type Options struct {
	// Negentropy tries NIP-77 first; false goes straight to REQ pagination.
	Negentropy bool
	// RoundTimeout bounds the wait for each answer from the peer (a NEG-MSG,
	// or the next frame of a REQ). Default 15s.
	RoundTimeout time.Duration
	// Retries is how many times a negentropy session is restarted after the
	// peer reports it closed (khatru's NEG-OPEN/NEG-MSG race). Default 1;
	// negative means none.
	Retries int
	// RetryDelay times the retry number is waited before a restarted
	// session's first NEG-MSG, so the retry does not lose the same race
	// again. Default 100ms.
	RetryDelay time.Duration
	// FrameLimit is the negentropy frame size limit in bytes (hex doubles it
	// on the wire) every peer accepts. Default 60,000, under strfry's 128 KiB
	// payload cap.
	FrameLimit int
	// LargeFrameLimit is the frame size limit tried first with a peer not
	// yet seen to refuse it: the rounds of a session whose sets differ
	// everywhere are about what we send over the frame limit (1 % missing
	// at 1,000,000 events: 91 rounds at 60,000, 20 at 500,000). A peer that
	// drops the connection or ends the session once we sent a frame above
	// FrameLimit is remembered, and the catch-up starts over with
	// FrameLimit. Default 500,000 (grasp's negentropy_frame_bytes: a grasp
	// peer reads 2 MiB messages); at most FrameLimit turns it off.
	LargeFrameLimit int
	// IDsPerReq is how many ids one REQ asks for when fetching. Default 250.
	IDsPerReq int
	// InFlight is how many id REQs may be outstanding at once. Default 4.
	InFlight int
	// PageLimit is the limit of each fallback page. Default 500.
	PageLimit int
	// MaxEvents bounds what one run will fetch from a peer (ids taken from
	// negentropy, or events paged by REQ). Default 1,000,000.
	MaxEvents int
	// ReadBuffer bounds, in bytes, the frames read from the peer and not
	// yet handled. The socket is read regardless of the caller's pace (so
	// pings are answered) until this much is waiting. Default 16 MiB: some
	// thousand events, more than the requests in flight ask for.
	ReadBuffer int
}

func (o Options) withDefaults() Options {
	if o.RoundTimeout <= 0 {
		o.RoundTimeout = 15 * time.Second
	}
	if o.Retries == 0 {
		o.Retries = 1
	} else if o.Retries < 0 {
		o.Retries = 0
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 100 * time.Millisecond
	}
	if o.FrameLimit <= 0 {
		o.FrameLimit = 60_000
	} else if o.FrameLimit < 4096 {
		o.FrameLimit = 4096 // the engine panics below this
	}
	if o.LargeFrameLimit == 0 {
		o.LargeFrameLimit = 500_000
	}
	if o.IDsPerReq <= 0 {
		o.IDsPerReq = 250
	}
	if o.InFlight <= 0 {
		o.InFlight = 4
	}
	if o.PageLimit <= 0 {
		o.PageLimit = 500
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = 1_000_000
	}
	if o.ReadBuffer <= 0 {
		o.ReadBuffer = 16 << 20
	}
	return o
}

// Result describes one catch-up. It is returned, filled as far as the run
// got, even with an error.
type Result struct {
	Method         Method
	FallbackReason string // why negentropy was abandoned, "" if it was not
	Rounds         int    // NEG-MSG answers processed plus REQs sent
	Retries        int    // negentropy sessions restarted, for either reason below
	// SmallFrameRestarts is how many of Retries started over with small
	// frames after the peer refused a large one; the rest are sessions the
	// peer reported closed (khatru's NEG-OPEN/NEG-MSG race), which a
	// loaded machine makes more likely.
	SmallFrameRestarts int
	Local              int // events we held for the filter
	PeerLacks          int // ids we hold that the peer lacks (negentropy only)
	Needed             int // ids the peer has that we lack (negentropy only)
	Fetched            int // events received that passed verification
	// Early is how many of Delivered were delivered before the negentropy
	// session ended: the fetch overlaps the reconciliation.
	Early         int
	Known         int   // verified events we already held (REQ only), not delivered
	Delivered     int   // events the Sink accepted
	Rejected      int   // events the Sink refused
	Bad           int   // events dropped: wrong id, bad signature, not asked for
	Missing       int   // needed ids the peer never sent
	Gaps          int   // delivered events the local store did not have
	Truncated     int   // REQ only: seconds the peer's cap kept us from listing fully
	BytesSent     int64 // websocket payload bytes, all sessions of the run
	BytesReceived int64
	Duration      time.Duration
	// Reconcile is the part of Duration the negentropy sessions took (NEG-OPEN
	// to the last NEG-MSG, retries included); the fetch starts during it.
	Reconcile time.Duration
}

// Config builds a Client.
type Config struct {
	// Dial opens the connections; nil: HTTPDialer(nil, Limits).
	Dial Dialer
	// Limits bound what a peer may send (MaxPeerMessageBytes per frame,
	// for the default dialer); zero fields take config's defaults.
	Limits config.Limits
}

// Client runs catch-ups. It is safe for concurrent use; each CatchUp uses
// its own connection.
type Client struct {
	log   hclog.Logger
	clk   clock.Clock
	dial  Dialer
	m     *metrics
	mu    sync.Mutex
	noted map[string]bool // relays whose fallback was logged already
	// small are the relays that refused a frame above FrameLimit
	small map[string]bool
}

// New returns a Client, registering its metrics with env's registerer.
func New(cfg Config, e env.Env) (*Client, error) {
	e = e.OrDefaults()
	c := &Client{log: e.Log, clk: e.Clock, dial: cfg.Dial, noted: map[string]bool{}, small: map[string]bool{}}
	if c.dial == nil {
		c.dial = HTTPDialer(nil, cfg.Limits)
	}
	m, err := newMetrics(e.Metrics)
	if err != nil {
		return nil, fmt.Errorf("register catch-up metrics: %w", err)
	}
	c.m = m
	return c, nil
}

// errConn marks a failure of the connection itself (dial, write, read).
var errConn = errors.New("connection failed")

// CatchUp brings us up to date with url for filter: every event matching
// filter that the peer has and local lacks is fetched, verified and given to
// sink. It returns when done, on error, or when ctx ends; the connection is
// closed before it returns.
func (c *Client) CatchUp(ctx context.Context, url string, filter nostr.Filter, local Local, sink Sink, opts Options) (Result, error) {
	opts = opts.withDefaults()
	start := c.clk.Now()
	res := Result{Method: MethodReq}
	if opts.Negentropy {
		res.Method = MethodNegentropy
	}
	err := c.run(ctx, url, filter, local, sink, opts, &res)
	res.Duration = c.clk.Since(start)
	c.m.observe(res, err)
	if err != nil {
		c.log.Warn("catch-up failed", "relay", url, "method", res.Method, "fetched", res.Fetched, "error", err)
		return res, fmt.Errorf("catch up with %s: %w", url, err)
	}
	// Every delivered event was missing here, which on a first sync is
	// simply history; whether it is a gap live sync should have closed is
	// decided (and logged at WARN/ERROR) by the connection layer, which
	// knows when its live subscription was open.
	c.log.Debug("catch-up done", "relay", url, "method", res.Method, "rounds", res.Rounds,
		"needed", res.Needed, "delivered", res.Delivered, "bad", res.Bad, "sent", res.BytesSent, "received", res.BytesReceived)
	return res, nil
}

func (c *Client) run(ctx context.Context, url string, filter nostr.Filter, local Local, sink Sink, opts Options, res *Result) error {
	set, items, err := localOf(ctx, local, filter, opts.Negentropy)
	if err != nil {
		return err
	}
	res.Local = set.Size()

	s, err := c.open(ctx, url, opts)
	if err != nil {
		return err
	}
	defer func() { s.close(res) }()

	if opts.Negentropy {
		t := c.clk.Now()
		s.frame = opts.FrameLimit
		if opts.LargeFrameLimit > opts.FrameLimit && !c.refusesLarge(url) {
			s.frame = opts.LargeFrameLimit
		}
		f := newFetcher(filter, sink, opts, res)
		fallback, err := s.reconcile(filter, set, f, res)
		if (err != nil || fallback != "") && s.sentLarge && ctx.Err() == nil && !errors.Is(err, errRefused) {
			// The peer may have refused a frame larger than it reads (strfry
			// and khatru close the connection): remember it and start over
			// with frames every peer reads. What was asked for and not
			// received yet is asked for again on the new connection.
			c.log.Debug("negentropy session failed after a large frame; retrying with small ones", "relay", url, "fallback", fallback, "error", err)
			c.noteRefusesLarge(url)
			res.Retries++
			res.SmallFrameRestarts++
			s.close(res)
			f.lost()
			if s, err = c.open(ctx, url, opts); err != nil {
				return err
			}
			s.frame = opts.FrameLimit
			fallback, err = s.reconcile(filter, set, f, res)
		}
		res.Reconcile = c.clk.Since(t)
		res.Early = res.Delivered
		switch {
		case err != nil && fallback == "":
			return err
		case fallback == "":
			return f.finish(s)
		}
		res.Method, res.FallbackReason = MethodReq, fallback
		c.noteFallback(url, fallback)
		f.abandon(s)
		if errors.Is(err, errConn) {
			// The peer hung up on NEG-OPEN: some relays drop the socket on a
			// verb they do not know. Page over a fresh connection.
			s.close(res)
			fresh, err := c.open(ctx, url, opts)
			if err != nil {
				return err
			}
			s = fresh
		}
		// Events fetched before the session failed are not delivered twice.
		return s.paginate(filter, knownIDs(set, items, f.got), sink, res)
	}
	return s.paginate(filter, knownIDs(set, items, nil), sink, res)
}

// knownIDs is what paging skips: the ids we hold, and those fetched already.
func knownIDs(set negentropy.Storage, items []Item, fetched map[string]struct{}) map[string]struct{} {
	known := make(map[string]struct{}, set.Size())
	if items != nil {
		for _, it := range items {
			known[it.ID] = struct{}{}
		}
	} else {
		for _, it := range set.Range(0, set.Size()) {
			known[it.ID] = struct{}{}
		}
	}
	for id := range fetched {
		known[id] = struct{}{}
	}
	return known
}

// localOf is what we hold for filter: as a negentropy set, from local's
// index when it has one (SetLocal) and NIP-77 is to be tried, else from its
// items, which are then returned too.
func localOf(ctx context.Context, local Local, filter nostr.Filter, tryNeg bool) (negentropy.Storage, []Item, error) {
	if sl, ok := local.(SetLocal); ok && tryNeg {
		set, ok, err := sl.Set(ctx, filter)
		if err != nil {
			return nil, nil, fmt.Errorf("list local events: %w", err)
		}
		if ok {
			return set, nil, nil
		}
	}
	items, err := local.Items(ctx, filter)
	if err != nil {
		return nil, nil, fmt.Errorf("list local events: %w", err)
	}
	return localSet(items), items, nil
}

func (c *Client) refusesLarge(url string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.small[url]
}

func (c *Client) noteRefusesLarge(url string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.small) >= maxNoted {
		clear(c.small) // bounded: forgetting costs one more failed attempt
	}
	c.small[url] = true
}

// noteFallback logs a relay's first fallback only: peers without NIP-77 would
// otherwise log on every catch-up.
// maxNoted bounds the relays remembered as logged.
const maxNoted = 4096

func (c *Client) noteFallback(url, reason string) {
	c.m.fallbacks.WithLabelValues(fallbackKind(reason)).Inc()
	c.mu.Lock()
	first := !c.noted[url]
	if len(c.noted) >= maxNoted {
		clear(c.noted) // relay URLs are strangers': keep the memory bounded
	}
	c.noted[url] = true
	c.mu.Unlock()
	if first {
		c.log.Warn("relay cannot do negentropy, falling back to REQ paging", "relay", url, "reason", reason)
	}
}

// fallbackKind turns a free-text reason into a bounded metric label.
func fallbackKind(reason string) string {
	for _, k := range []string{"notice", "error", "timeout", "connection", "protocol"} {
		if strings.HasPrefix(reason, k) {
			return k
		}
	}
	return "other"
}

// validItems drops local entries the negentropy vector would panic on.
func validItems(items []Item) []Item {
	out := make([]Item, 0, len(items))
	for _, it := range items {
		if nip34.IsHex64(it.ID) {
			out = append(out, it)
		}
	}
	return out
}
