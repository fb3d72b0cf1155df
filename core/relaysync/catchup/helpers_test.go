package catchup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/grasp-dev/grasp/core/env"
)

const (
	kindPatch = 1617
	kindIssue = 1621
	// t0 is the newest second of the test corpus.
	t0 = nostr.Timestamp(1_760_000_000)
)

var (
	testKey = nostr.GeneratePrivateKey()
	batches atomic.Int64
)

// corpus builds n signed events, newest first: the first cluster share the
// second t0, the rest are spread three per second below it. Kinds alternate
// between patch and issue so filters can be split by kind.
func corpus(tb testing.TB, n, cluster int) []*nostr.Event {
	tb.Helper()
	batch := batches.Add(1) // distinct content, so distinct ids, per call
	out := make([]*nostr.Event, n)
	for i := range out {
		ts := t0
		if i >= cluster {
			ts = t0 - 1 - nostr.Timestamp((i-cluster)/3)
		}
		kind := kindPatch
		if i%2 == 1 {
			kind = kindIssue
		}
		e := &nostr.Event{CreatedAt: ts, Kind: kind, Content: fmt.Sprintf("event %d of batch %d", i, batch),
			Tags: nostr.Tags{{"a", "30617:" + strings.Repeat("a", 64) + ":repo"}}}
		if err := e.Sign(testKey); err != nil {
			tb.Fatalf("sign: %v", err)
		}
		out[i] = e
	}
	return out
}

var (
	poolOnce sync.Once
	pool     []*nostr.Event
)

// testPool is shared by the tests: 1,100 events, 600 of them in one second.
// Signing and verifying cost ~3 and ~7 ms an event under -race, so the
// package's tests keep to a few thousand of each.
func testPool(tb testing.TB) []*nostr.Event {
	poolOnce.Do(func() { pool = corpus(tb, 1100, 600) })
	return pool
}

var allKinds = nostr.Filter{Kinds: []int{kindPatch, kindIssue}}

// memStore is our side in tests: Local and Sink over a map.
type memStore struct {
	mu     sync.Mutex
	events map[string]*nostr.Event
}

func newMem(evts ...*nostr.Event) *memStore {
	m := &memStore{events: map[string]*nostr.Event{}}
	for _, e := range evts {
		m.events[e.ID] = e
	}
	return m
}

func (m *memStore) Items(_ context.Context, f nostr.Filter) ([]Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Item
	for _, e := range m.events {
		if f.Matches(e) {
			out = append(out, Item{ID: e.ID, CreatedAt: e.CreatedAt})
		}
	}
	return out, nil
}

func (m *memStore) Deliver(_ context.Context, e *nostr.Event) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.events[e.ID]; ok {
		return false
	}
	m.events[e.ID] = e
	return true
}

func (m *memStore) has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.events[id]
	return ok
}

func (m *memStore) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.events)
}

// requireHolds fails unless every one of evts is in m.
func requireHolds(t *testing.T, m *memStore, evts []*nostr.Event) {
	t.Helper()
	missing := 0
	for _, e := range evts {
		if !m.has(e.ID) {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d upstream events missing locally", missing, len(evts))
	}
}

// upstreamOpts describe a plain khatru relay used as a foreign peer.
type upstreamOpts struct {
	negentropy bool
	reqCap     int // results per REQ, 0: uncapped; negentropy is never capped
	// rejectNeg makes khatru refuse NEG-OPEN (it answers NEG-ERROR).
	rejectNeg bool
	wrap      func(http.Handler) http.Handler
	// maxMessage is the largest message khatru reads (it closes the
	// connection on a larger one); 0: 4 MiB.
	maxMessage int64
}

// upstream serves evts from a khatru relay on 127.0.0.1 and returns its
// ws:// URL. The store is filled before serving and only read after.
func upstream(tb testing.TB, evts []*nostr.Event, o upstreamOpts) string {
	tb.Helper()
	store := &slicestore.SliceStore{MaxLimit: 1 << 30}
	if err := store.Init(); err != nil {
		tb.Fatal(err)
	}
	sorted := slices.Clone(evts)
	// slicestore keeps newest first, higher id first within a second;
	// inserting in that order appends.
	slices.SortFunc(sorted, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(b.CreatedAt - a.CreatedAt)
		}
		return strings.Compare(b.ID, a.ID)
	})
	for _, e := range sorted {
		if err := store.SaveEvent(context.Background(), e); err != nil {
			tb.Fatalf("save: %v", err)
		}
	}
	rl := khatru.NewRelay()
	rl.Log = log.New(io.Discard, "", 0)
	rl.Negentropy = o.negentropy
	rl.MaxMessageSize = 4 << 20
	if o.maxMessage > 0 {
		rl.MaxMessageSize = o.maxMessage
	}
	// khatru drops a client that leaves its pings unanswered for PongWait
	// (60 s) of real time; a catch-up busy storing a page on a loaded machine
	// does, and losing it is not what these tests are about.
	rl.PongWait = testwait.Limit(tb)
	rl.PingPeriod = rl.PongWait / 2
	rl.WriteWait = rl.PongWait
	rl.QueryEvents = append(rl.QueryEvents, func(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
		if o.reqCap > 0 && !eventstore.IsNegentropySession(ctx) && (f.Limit == 0 || f.Limit > o.reqCap) {
			f.Limit = o.reqCap
		}
		return drained(ctx, store, f)
	})
	if o.rejectNeg {
		rl.RejectFilter = append(rl.RejectFilter, func(ctx context.Context, _ nostr.Filter) (bool, string) {
			if eventstore.IsNegentropySession(ctx) {
				return true, "blocked: negentropy is disabled here"
			}
			return false, ""
		})
	}
	var h http.Handler = rl
	if o.wrap != nil {
		h = o.wrap(h)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// drained runs a slicestore query and hands khatru a channel that is
// already complete: slicestore's goroutine races if its reader stops early.
// It also makes since inclusive as NIP-01 says; slicestore's binary search
// leaves out events created exactly at since.
func drained(ctx context.Context, store *slicestore.SliceStore, f nostr.Filter) (chan *nostr.Event, error) {
	q := f
	if f.Since != nil && *f.Since > 0 {
		s := *f.Since - 1
		q.Since = &s
	}
	in, err := store.QueryEvents(ctx, q)
	if err != nil {
		return nil, err
	}
	var all []*nostr.Event
	for e := range in {
		if f.Matches(e) {
			all = append(all, e)
		}
	}
	out := make(chan *nostr.Event, len(all))
	for _, e := range all {
		out <- e
	}
	close(out)
	return out, nil
}

// scripted is a hand-written NIP-01/NIP-77 peer for behaviours khatru
// cannot be made to show: the NEG-ERR label, a lost session, silence.
type scripted struct {
	events    []*nostr.Event // newest first
	errLabel  string         // answer NEG-OPEN with [errLabel, sub, errReason]
	errReason string
	loseFirst bool          // answer the first NEG-MSG with NEG-ERROR "CLOSED"
	silentNeg bool          // never answer NEG-OPEN
	hostile   string        // answer NEG-OPEN with this raw NEG-MSG payload
	gotOpen   chan struct{} // receives one value per NEG-OPEN
	extra     func(sub string, f nostr.Filter) []*nostr.Event
	closeReqs string // answer every REQ with CLOSED and this reason

	mu    sync.Mutex
	lost  bool
	verbs []string // what the client sent, in order
}

// received is the verbs the client has sent so far, in order.
func (p *scripted) received() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.verbs)
}

func (p *scripted) serve(tb testing.TB) string {
	tb.Helper()
	slices.SortFunc(p.events, func(a, b *nostr.Event) int {
		if a.CreatedAt != b.CreatedAt {
			return int(b.CreatedAt - a.CreatedAt)
		}
		return strings.Compare(a.ID, b.ID)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(16 << 20)
		p.handle(r.Context(), c)
	}))
	tb.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

func (p *scripted) handle(ctx context.Context, c *websocket.Conn) {
	sessions := map[string]*negentropy.Negentropy{}
	send := func(v interface{ MarshalJSON() ([]byte, error) }) bool {
		b, _ := v.MarshalJSON()
		return c.Write(ctx, websocket.MessageText, b) == nil
	}
	sendRaw := func(s string) bool { return c.Write(ctx, websocket.MessageText, []byte(s)) == nil }
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		m := string(msg)
		p.mu.Lock()
		p.verbs = append(p.verbs, label(msg))
		p.mu.Unlock()
		switch label(msg) {
		case "NEG-OPEN":
			env := nip77.ParseNegMessage(m).(*nip77.OpenEnvelope)
			if p.gotOpen != nil {
				p.gotOpen <- struct{}{}
			}
			if p.silentNeg {
				continue
			}
			if p.hostile != "" {
				sendRaw(fmt.Sprintf(`["NEG-MSG",%q,%q]`, env.SubscriptionID, p.hostile))
				continue
			}
			if p.errLabel != "" {
				sendRaw(fmt.Sprintf(`[%q,%q,%q]`, p.errLabel, env.SubscriptionID, p.errReason))
				continue
			}
			vec := vector.New()
			for _, e := range p.events {
				if env.Filter.Matches(e) {
					vec.Insert(e.CreatedAt, e.ID)
				}
			}
			vec.Seal()
			neg := negentropy.New(vec, 1<<20)
			out, err := neg.Reconcile(env.Message)
			if err != nil {
				sendRaw(fmt.Sprintf(`["NEG-ERR",%q,"error: %s"]`, env.SubscriptionID, err))
				continue
			}
			sessions[env.SubscriptionID] = neg
			send(nip77.MessageEnvelope{SubscriptionID: env.SubscriptionID, Message: out})
		case "NEG-MSG":
			env := nip77.ParseNegMessage(m).(*nip77.MessageEnvelope)
			neg := sessions[env.SubscriptionID]
			p.mu.Lock()
			lose := p.loseFirst && !p.lost
			p.lost = p.lost || lose
			p.mu.Unlock()
			if neg == nil || lose {
				delete(sessions, env.SubscriptionID)
				sendRaw(fmt.Sprintf(`["NEG-ERROR",%q,"CLOSED"]`, env.SubscriptionID))
				continue
			}
			out, err := neg.Reconcile(env.Message)
			if err != nil {
				sendRaw(fmt.Sprintf(`["NEG-ERR",%q,"error: %s"]`, env.SubscriptionID, err))
				continue
			}
			send(nip77.MessageEnvelope{SubscriptionID: env.SubscriptionID, Message: out})
		case "NEG-CLOSE":
			env := nip77.ParseNegMessage(m).(*nip77.CloseEnvelope)
			delete(sessions, env.SubscriptionID)
		case "REQ":
			var env nostr.ReqEnvelope
			if env.FromJSON(m) != nil {
				continue
			}
			if p.closeReqs != "" {
				send(nostr.ClosedEnvelope{SubscriptionID: env.SubscriptionID, Reason: p.closeReqs})
				continue
			}
			for _, f := range env.Filters {
				n := 0
				for _, e := range p.events {
					if f.Limit > 0 && n >= f.Limit {
						break
					}
					if f.Matches(e) {
						n++
						sub := env.SubscriptionID
						if !send(nostr.EventEnvelope{SubscriptionID: &sub, Event: *e}) {
							return
						}
					}
				}
				if p.extra != nil {
					for _, e := range p.extra(env.SubscriptionID, f) {
						sub := env.SubscriptionID
						send(nostr.EventEnvelope{SubscriptionID: &sub, Event: *e})
					}
				}
			}
			send(nostr.EOSEEnvelope(env.SubscriptionID))
		}
	}
}

// cutProxy forwards TCP to target and drops both sides once target has sent
// after bytes: a relay that vanishes mid-sync.
func cutProxy(tb testing.TB, target string, after int64) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	host := strings.TrimPrefix(target, "ws://")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				u, err := net.Dial("tcp", host)
				if err != nil {
					c.Close()
					return
				}
				go func() { io.Copy(u, c); u.Close() }()
				io.CopyN(c, u, after)
				c.Close()
				u.Close()
			}()
		}
	}()
	return "ws://" + ln.Addr().String()
}

// clientGoroutines lists goroutines of catch-up sessions and client
// websockets still alive.
func clientGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s := string(g)
		if strings.Contains(s, "catchup.(*session)") || (strings.Contains(s, "coder/websocket") && !strings.Contains(s, "catchup.(*scripted)")) {
			out = append(out, s)
		}
	}
	return out
}

// requireNoLeak waits (bounded) for session goroutines to end.
func requireNoLeak(t *testing.T) {
	t.Helper()
	var left []string
	defer func() {
		if len(left) > 0 {
			t.Logf("%d catch-up goroutines left:\n%s", len(left), strings.Join(left, "\n\n"))
		}
	}()
	testwait.For(t, "catch-up goroutines to end", func() bool {
		left = clientGoroutines()
		return len(left) == 0
	})
}

func newClient(tb testing.TB, cfg Config, e env.Env) *Client {
	tb.Helper()
	c, err := New(cfg, e)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func ctxFor(t *testing.T) context.Context { return testwait.Context(t) }

// realClock stretches the round timeout of a catch-up on the real clock to
// testwait's bound, so that a loaded machine never turns a slow answer into
// a timeout fallback; the timeout itself is tested on a fake clock.
func realClock(t testing.TB, o Options) Options {
	o.RoundTimeout = testwait.Limit(t)
	return o
}
