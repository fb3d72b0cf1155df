package gate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/negindex"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// lockedStore serialises a slicestore, which has no locking of its own while
// khatru calls it from one goroutine per message.
type lockedStore struct {
	mu sync.Mutex
	s  slicestore.SliceStore
	// ix, when set, follows saves and deletions (the tests using it store
	// regular events only), and NEG-OPEN is answered from it.
	ix *negindex.Index
}

func newLockedStore() *lockedStore {
	st := &lockedStore{s: slicestore.SliceStore{MaxLimit: 1 << 20}}
	st.s.Init()
	return st
}

func (st *lockedStore) Init() error { return nil }
func (st *lockedStore) Close()      {}

func (st *lockedStore) SaveEvent(ctx context.Context, evt *nostr.Event) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	err := st.s.SaveEvent(ctx, evt)
	if e, ok := negindex.FromNostr(evt); ok && err == nil && st.ix != nil {
		st.ix.Add(e)
	}
	return err
}

func (st *lockedStore) ReplaceEvent(ctx context.Context, evt *nostr.Event) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.s.ReplaceEvent(ctx, evt)
}

func (st *lockedStore) DeleteEvent(ctx context.Context, evt *nostr.Event) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	err := st.s.DeleteEvent(ctx, evt)
	if e, ok := negindex.FromNostr(evt); ok && err == nil && st.ix != nil {
		st.ix.Remove(e)
	}
	return err
}

func (st *lockedStore) QueryEvents(ctx context.Context, filter nostr.Filter) (chan *nostr.Event, error) {
	st.mu.Lock()
	var found []*nostr.Event
	ch, err := st.s.QueryEvents(ctx, filter)
	if err == nil {
		for evt := range ch {
			found = append(found, evt)
		}
	}
	st.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := make(chan *nostr.Event)
	go func() {
		defer close(out)
		for _, evt := range found {
			select {
			case out <- evt:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// testBackend is a minimal relay behind the gate: it checks ids and
// signatures, stores in the test store, answers duplicates, broadcasts what
// it stored, and records the meta the gate hands it.
type testBackend struct {
	store *lockedStore
	gate  *Gate
	mu    sync.Mutex
	metas []policy.Meta
	// queries are the filters Query was asked, in order.
	queries []nostr.Filter
	// refuse, when set, may answer an event before it is stored.
	refuse func(evt *nostr.Event, meta policy.Meta) string
}

func (b *testBackend) Accept(ctx context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result {
	b.mu.Lock()
	b.metas = append(b.metas, meta)
	refuse := b.refuse
	b.mu.Unlock()
	if refuse != nil {
		if msg := refuse(evt, meta); msg != "" {
			return outcome.Refused(msg, outcome.Blocked)
		}
	}
	if !evt.CheckID() {
		return outcome.New(outcome.Invalid, "id is computed incorrectly")
	}
	if ok, err := evt.CheckSignature(); err != nil || !ok {
		return outcome.New(outcome.Invalid, "signature is invalid")
	}
	if err := b.store.SaveEvent(ctx, evt); err != nil {
		return outcome.New(outcome.Duplicate, "already have this event")
	}
	b.gate.Broadcast(evt)
	return outcome.New(outcome.Stored, "")
}

func (b *testBackend) Query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	b.mu.Lock()
	b.queries = append(b.queries, f)
	b.mu.Unlock()
	return b.store.QueryEvents(ctx, f)
}

// NegentropyStorage answers from the store's index when it has one.
func (b *testBackend) NegentropyStorage(_ context.Context, f nostr.Filter, max int) (negentropy.Storage, bool, error) {
	if b.store.ix == nil {
		return nil, false, nil
	}
	st, ok, err := b.store.ix.Select(f, max)
	if !ok || err != nil {
		return nil, ok, err
	}
	return st, true, nil
}

func (b *testBackend) Count(ctx context.Context, f nostr.Filter) (int64, error) {
	ch, err := b.store.QueryEvents(ctx, f)
	if err != nil {
		return 0, err
	}
	var n int64
	for range ch {
		n++
	}
	return n, nil
}

// testEnv is one gate in front of the test backend, on 127.0.0.1:0.
type testEnv struct {
	t       *testing.T
	backend *testBackend
	store   *lockedStore
	gate    *Gate
	reg     *prometheus.Registry
	srv     *httptest.Server
	url     string
}

// newEnv serves a gate with the given limits (zero fields: config's
// defaults, as in production).
func newEnv(t *testing.T, lim config.Limits) *testEnv {
	t.Helper()
	return newEnvWith(t, Options{Limits: lim}, nil)
}

// newEnvIndexed is newEnv whose NEG-OPENs are answered from a negentropy
// index (core/negindex), as the store's are.
func newEnvIndexed(t *testing.T, lim config.Limits) *testEnv {
	t.Helper()
	st := newLockedStore()
	st.ix = negindex.New(nil)
	return newEnvStore(t, Options{Limits: lim}, nil, st)
}

// newEnvWith serves a gate with opts (its Backend set here) and clk (nil:
// the wall clock).
func newEnvWith(t *testing.T, opts Options, clk clock.Clock) *testEnv {
	t.Helper()
	return newEnvStore(t, opts, clk, newLockedStore())
}

func newEnvStore(t *testing.T, opts Options, clk clock.Clock, st *lockedStore) *testEnv {
	t.Helper()
	e := &testEnv{t: t, store: st, reg: prometheus.NewRegistry()}
	e.backend = &testBackend{store: e.store}
	opts.Backend = e.backend
	e.gate = New(opts, env.Env{Clock: clk, Metrics: e.reg})
	e.backend.gate = e.gate
	e.srv = httptest.NewServer(e.gate)
	t.Cleanup(e.srv.Close)
	e.url = "ws" + strings.TrimPrefix(e.srv.URL, "http")
	return e
}

func (e *testEnv) counter(name string, labels ...string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatalf("gather metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(labels) == 2 {
				match := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[0] && lp.GetValue() == labels[1] {
						match = true
					}
				}
				if !match {
					continue
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return 0
}

// rawClient is a websocket client speaking frames directly.
type rawClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func (e *testEnv) dial() *rawClient {
	e.t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(e.url, nil)
	if err != nil {
		e.t.Fatalf("dial %s: %v", e.url, err)
	}
	e.t.Cleanup(func() { c.Close() })
	return &rawClient{t: e.t, conn: c}
}

func (c *rawClient) send(s string) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		c.t.Fatalf("write %q: %v", s, err)
	}
}

func (c *rawClient) sendJSON(v ...any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatalf("marshal: %v", err)
	}
	c.send(string(b))
}

// read returns the next frame as a decoded array, failing after 10 s.
func (c *rawClient) read() []any {
	c.t.Helper()
	c.conn.SetReadDeadline(testwait.Deadline(c.t))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var v []any
	if err := json.Unmarshal(b, &v); err != nil {
		c.t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// expect reads frames until one with label arrives, skipping others.
func (c *rawClient) expect(label string) []any {
	c.t.Helper()
	for i := 0; i < 10000; i++ {
		v := c.read()
		if len(v) > 0 && v[0] == label {
			return v
		}
	}
	c.t.Fatalf("no %s within 10000 frames", label)
	return nil
}

// reqWorks proves the connection still serves: a REQ gets its EOSE.
func (c *rawClient) reqWorks() {
	c.t.Helper()
	id := randHex(4)
	c.sendJSON("REQ", id, map[string]any{"kinds": []int{1}, "limit": 1})
	for i := 0; i < 10000; i++ {
		v := c.read()
		if len(v) >= 2 && v[0] == "EOSE" && v[1] == id {
			c.sendJSON("CLOSE", id)
			return
		}
	}
	c.t.Fatalf("no EOSE for %s", id)
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// fakeEvent is an unsigned event with a random id: enough for negentropy,
// which only compares (created_at, id).
func fakeEvent(ts int64) *nostr.Event {
	return &nostr.Event{ID: randHex(32), PubKey: randHex(32), CreatedAt: nostr.Timestamp(ts), Kind: 1, Tags: nostr.Tags{}, Sig: randHex(64)}
}

// signedEvent is a kind-1-style event by sk at ts, as a value (the frames
// and the union take it so); testkit signs it.
func signedEvent(t testing.TB, sk string, kind int, content string, ts int64) nostr.Event {
	t.Helper()
	return *testkit.Sign(t, sk, &nostr.Event{CreatedAt: nostr.Timestamp(ts), Kind: kind, Tags: nostr.Tags{}, Content: content})
}
