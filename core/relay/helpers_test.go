package relay

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"net"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	dgbadger "github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore/badger"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

func openBadger(tb testing.TB, dir string, syncWrites bool) *badger.BadgerBackend {
	tb.Helper()
	db := &badger.BadgerBackend{
		Path:     dir,
		MaxLimit: 1000,
		BadgerOptionsModifier: func(o dgbadger.Options) dgbadger.Options {
			// Small tables keep a test's memory modest; SyncWrites gives a
			// durable OK for the benchmark.
			return o.WithLogger(nil).WithSyncWrites(syncWrites).
				WithMemTableSize(8 << 20).WithNumMemtables(2).
				WithBlockCacheSize(8 << 20).WithIndexCacheSize(4 << 20)
		},
	}
	if err := db.Init(); err != nil {
		tb.Fatalf("open badger: %v", err)
	}
	return db
}

type testRelay struct {
	srv    *Server
	store  *badger.BadgerBackend
	ws     string // ws://127.0.0.1:port
	base   string // http://127.0.0.1:port
	cancel context.CancelFunc
	done   chan error
}

// listenBase at the start of Options.PublicURL stands for the test relay's
// own http://127.0.0.1:port, known only once it listens.
const listenBase = "http://listen.invalid"

// startRelay serves a relay on 127.0.0.1:0 until the test ends.
func startRelay(tb testing.TB, opts Options) *testRelay {
	tb.Helper()
	return startRelayEnv(tb, opts, env.Env{})
}

func startRelayEnv(tb testing.TB, opts Options, e env.Env) *testRelay {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	base := "http://" + ln.Addr().String()
	if opts.PublicURL == "" {
		opts.PublicURL = base
	} else if rest, ok := strings.CutPrefix(opts.PublicURL, listenBase); ok {
		opts.PublicURL = base + rest
	}
	tr := &testRelay{base: base, ws: "ws://" + ln.Addr().String(), done: make(chan error, 1)}
	if opts.Events == nil {
		tr.store = openBadger(tb, tb.TempDir(), false)
		opts.Events = tr.store
	}
	tr.srv, err = New(opts, e)
	if err != nil {
		tb.Fatalf("new relay: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr.cancel = cancel
	go func() { tr.done <- tr.srv.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-tr.done:
		case <-testwait.After(tb):
			tb.Errorf("relay did not stop")
		}
		if tr.store != nil {
			tr.store.Close()
		}
	})
	return tr
}

// key is testkit's throwaway identity; its event takes the Unix seconds
// the relay tests compute with.
type key struct{ testkit.Key }

func newKey(tb testing.TB) key { return key{testkit.NewKey(tb)} }

func (k key) event(tb testing.TB, kind int, created int64, tags nostr.Tags, content string) *nostr.Event {
	tb.Helper()
	return k.Event(tb, kind, nostr.Timestamp(created), tags, content)
}

// client is a minimal Nostr client over a raw websocket. go-nostr's Relay
// races with itself when its connection ends (Connection is written by one
// of its goroutines and read by another), which -race reports, so tests
// speak the protocol with go-nostr's types over coder/websocket instead.
type client struct {
	*rawConn
	n int
}

func connect(tb testing.TB, url string) *client {
	tb.Helper()
	return &client{rawConn: dialRaw(tb, url)}
}

// publish sends evt and waits for its OK; OK false becomes an error.
func publish(tb testing.TB, c *client, evt *nostr.Event) error {
	tb.Helper()
	if ok, msg := publishOK(tb, c, evt); !ok {
		return errors.New("msg: " + msg)
	}
	return nil
}

// publishOK sends evt and returns its OK: accepted, and the message.
func publishOK(tb testing.TB, c *client, evt *nostr.Event) (bool, string) {
	tb.Helper()
	frame, err := json.Marshal([]any{"EVENT", evt})
	if err != nil {
		tb.Fatalf("marshal event: %v", err)
	}
	c.send(string(frame))
	seen := c.readUntil(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == evt.ID })
	ok := seen[len(seen)-1]
	if len(ok) < 4 {
		tb.Fatalf("malformed OK %s", describe(seen[len(seen)-1:]))
	}
	return string(ok[2]) == "true", str(ok, 3)
}

func mustPublish(tb testing.TB, c *client, evt *nostr.Event) {
	tb.Helper()
	if err := publish(tb, c, evt); err != nil {
		tb.Fatalf("publish kind %d: %v", evt.Kind, err)
	}
}

// query returns what the relay sends up to EOSE, then closes the REQ.
func query(tb testing.TB, c *client, f nostr.Filter) []*nostr.Event {
	tb.Helper()
	c.n++
	sub := "q" + strconv.Itoa(c.n)
	frame, err := json.Marshal([]any{"REQ", sub, f})
	if err != nil {
		tb.Fatalf("marshal filter: %v", err)
	}
	c.send(string(frame))
	var evts []*nostr.Event
	c.readUntil(func(m []json.RawMessage) bool {
		switch {
		case label(m) == "EVENT" && str(m, 1) == sub && len(m) > 2:
			var e nostr.Event
			if err := json.Unmarshal(m[2], &e); err != nil {
				tb.Fatalf("bad EVENT frame: %v", err)
			}
			evts = append(evts, &e)
		case label(m) == "CLOSED" && str(m, 1) == sub:
			tb.Fatalf("query %v closed: %s", f, str(m, 2))
		}
		return label(m) == "EOSE" && str(m, 1) == sub
	})
	c.send(`["CLOSE",` + strconv.Quote(sub) + `]`)
	return evts
}

func ids(evts []*nostr.Event) []string {
	out := make([]string, len(evts))
	for i, e := range evts {
		out[i] = e.ID
	}
	return out
}

// rawConn is a bare websocket client for frames go-nostr would never send.
type rawConn struct {
	tb testing.TB
	c  *websocket.Conn
}

func dialRaw(tb testing.TB, url string) *rawConn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(tb))
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(8 << 20)
	tb.Cleanup(func() { c.CloseNow() })
	return &rawConn{tb: tb, c: c}
}

func (rc *rawConn) send(frame string) {
	rc.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(rc.tb))
	defer cancel()
	if err := rc.c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		rc.tb.Fatalf("write frame: %v", err)
	}
}

// readUntil reads frames (decoded as JSON arrays) until done says so.
func (rc *rawConn) readUntil(done func(msg []json.RawMessage) bool) [][]json.RawMessage {
	rc.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(rc.tb))
	defer cancel()
	var seen [][]json.RawMessage
	for {
		_, b, err := rc.c.Read(ctx)
		if err != nil {
			rc.tb.Fatalf("read frame (seen %d: %s): %v", len(seen), describe(seen), err)
		}
		var msg []json.RawMessage
		if err := json.Unmarshal(b, &msg); err != nil || len(msg) == 0 {
			rc.tb.Fatalf("relay sent a non-array frame %q", b)
		}
		seen = append(seen, msg)
		if done(msg) {
			return seen
		}
	}
}

func label(msg []json.RawMessage) string {
	var s string
	_ = json.Unmarshal(msg[0], &s)
	return s
}

func str(msg []json.RawMessage, i int) string {
	if i >= len(msg) {
		return ""
	}
	var s string
	_ = json.Unmarshal(msg[i], &s)
	return s
}

func describe(seen [][]json.RawMessage) string {
	var parts []string
	for _, m := range seen {
		var raw []string
		for _, p := range m {
			raw = append(raw, string(p))
		}
		parts = append(parts, "["+strings.Join(raw, ",")+"]")
	}
	return strings.Join(parts, " ")
}

// fakePipeline answers with decide and counts calls.
type fakePipeline struct {
	mu     sync.Mutex
	calls  map[string]int
	metas  []policy.Meta
	decide func(evt *nostr.Event) policy.Decision
}

func (f *fakePipeline) Decide(_ context.Context, evt *nostr.Event, meta policy.Meta) policy.Decision {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[string]int)
	}
	f.calls[evt.ID]++
	f.metas = append(f.metas, meta)
	decide := f.decide
	f.mu.Unlock()
	if decide == nil {
		return policy.Decision{Outcome: policy.Store}
	}
	return decide(evt)
}

func (f *fakePipeline) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}
