package server_test

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/fiatjaf/khatru"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// newSyncEnv starts a server with GRASP-02 sync on (50 ms batch window so
// the fake clock needs little advancing).
func newSyncEnv(t *testing.T, mutate func(c *config.Config)) *testServer {
	t.Helper()
	return newEnv(t, func(c *config.Config) {
		c.Sync.Enabled = true
		c.Sync.BatchWindow = config.Duration(50 * time.Millisecond)
		if mutate != nil {
			mutate(c)
		}
	})
}

func (e *testServer) hasMetric(name string) bool {
	mfs, err := e.reg.Gatherer().Gather()
	if err != nil {
		return false
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return true
		}
	}
	return false
}

// relaySnapshot is the sync manager's view of one relay (zero if it is not
// tracked): per-relay metrics exist for bootstrap relays only.
func relaySnapshot(s *server.Server, url string) relaysync.RelaySnapshot {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mgr := s.SyncManager()
	if mgr == nil {
		return relaysync.RelaySnapshot{}
	}
	snap, err := mgr.Snapshot(ctx)
	if err != nil {
		return relaysync.RelaySnapshot{}
	}
	for _, r := range snap.Relays {
		if r.URL == url {
			return r
		}
	}
	return relaysync.RelaySnapshot{}
}

// leads reports whether e holds the leader lease, as its grasp_leader
// gauge tells an operator.
func (e *testServer) leads() bool { return e.metric("grasp_leader", "") == 1 }

func (e *testServer) relayUp(url string) bool {
	return relaySnapshot(e.srv, url).Status == relaysync.Connected
}

func (e *testServer) relayFilters(url string) int { return relaySnapshot(e.srv, url).Filters }

// metric is the value of name with the given label value ("" for none),
// summed over matching series, in e's registry.
func (e *testServer) metric(name, labelValue string) float64 {
	e.t.Helper()
	return metricIn(e.t, e.reg, name, labelValue)
}

// metricIn is metric in the registry reg, for a server a benchmark built.
func metricIn(tb testing.TB, reg *metrics.Registry, name, labelValue string) float64 {
	tb.Helper()
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := labelValue == ""
			for _, l := range m.GetLabel() {
				if l.GetValue() == labelValue {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// eventually polls cond, advancing the fake clock by step between polls so
// batch windows and reconnect timers fire, within testwait's bound (the
// sync of real sockets and stores is CPU-bound and slow under load).
// step 0 leaves the clock alone (for what must happen without timers).
func (e *testServer) eventually(what string, step time.Duration, cond func() bool) {
	e.t.Helper()
	var advance func()
	if step > 0 {
		advance = func() { e.clk.Advance(step) }
	}
	testwait.Stepping(e.t, what, advance, cond)
}

const syncStep = 50 * time.Millisecond

// upstream is a plain khatru relay (slicestore) standing in for a foreign
// peer. The store is guarded by our own lock: slicestore is not safe for
// concurrent writes and queries, and its query goroutine races if the
// reader stops early, so every query is drained under the lock.
type khatruPeer struct {
	t     testing.TB
	url   string
	rl    *khatru.Relay
	mu    sync.Mutex
	store *slicestore.SliceStore

	connMu sync.Mutex
	conns  map[net.Conn]bool
	down   atomic.Bool
	dials  atomic.Int64 // websocket upgrades served
	reqs   atomic.Int64 // REQ queries answered (negentropy sessions not counted)
}

type khatruOpts struct {
	negentropy bool
	reqCap     int // results per REQ (not per negentropy session); 0: none
}

func newKhatruPeer(tb testing.TB, o khatruOpts) *khatruPeer {
	tb.Helper()
	u := &khatruPeer{t: tb, store: &slicestore.SliceStore{MaxLimit: 1 << 30}, conns: map[net.Conn]bool{}}
	if err := u.store.Init(); err != nil {
		tb.Fatal(err)
	}
	rl := khatru.NewRelay()
	rl.Log = log.New(io.Discard, "", 0)
	rl.Negentropy = o.negentropy
	rl.MaxMessageSize = 4 << 20
	// khatru drops a client that leaves its pings unanswered for PongWait
	// (60 s) of real time; a catch-up busy storing a page on a loaded machine
	// does, and losing it is not what these tests are about.
	rl.PongWait = testwait.Limit(tb)
	rl.PingPeriod = rl.PongWait / 2
	rl.WriteWait = rl.PongWait
	rl.QueryEvents = append(rl.QueryEvents, func(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
		if !eventstore.IsNegentropySession(ctx) {
			u.reqs.Add(1)
		}
		if o.reqCap > 0 && !eventstore.IsNegentropySession(ctx) && (f.Limit == 0 || f.Limit > o.reqCap) {
			f.Limit = o.reqCap
		}
		return u.query(ctx, f)
	})
	rl.StoreEvent = append(rl.StoreEvent, func(ctx context.Context, evt *nostr.Event) error {
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.store.SaveEvent(ctx, evt)
	})
	rl.ReplaceEvent = append(rl.ReplaceEvent, func(ctx context.Context, evt *nostr.Event) error {
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.store.ReplaceEvent(ctx, evt)
	})
	u.rl = rl
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("Upgrade") != "" {
			u.dials.Add(1)
		}
		rl.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		u.connMu.Lock()
		defer u.connMu.Unlock()
		switch st {
		case http.StateNew:
			u.conns[c] = true
		case http.StateClosed:
			delete(u.conns, c)
		}
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	u.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return u
}

// query answers from a fully drained copy (since inclusive, as NIP-01 says;
// slicestore's search leaves out events at exactly since).
func (u *khatruPeer) query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	q := f
	if f.Since != nil && *f.Since > 0 {
		s := *f.Since - 1
		q.Since = &s
	}
	u.mu.Lock()
	// Not the REQ's ctx: slicestore stops without closing its channel when
	// ctx ends (a dropped connection), and the drain below would hold u.mu
	// forever (seen as a 15-minute CI hang in put).
	in, err := u.store.QueryEvents(context.Background(), q)
	if err != nil {
		u.mu.Unlock()
		return nil, err
	}
	var all []*nostr.Event
	for e := range in {
		if f.Matches(e) {
			all = append(all, e)
		}
	}
	u.mu.Unlock()
	out := make(chan *nostr.Event, len(all))
	for _, e := range all {
		out <- e
	}
	close(out)
	return out, nil
}

// put stores events directly, without broadcasting (khatru's broadcast
// races with subscription changes; live tests use our own server).
func (u *khatruPeer) put(evts ...*nostr.Event) {
	u.t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range evts {
		var err error
		if nostr.IsAddressableKind(e.Kind) || nostr.IsReplaceableKind(e.Kind) {
			err = u.store.ReplaceEvent(context.Background(), e)
		} else {
			err = u.store.SaveEvent(context.Background(), e)
		}
		if err != nil {
			u.t.Fatalf("upstream save: %v", err)
		}
	}
}

// drop cuts every connection and refuses new ones until up.
func (u *khatruPeer) drop() {
	u.down.Store(true)
	u.connMu.Lock()
	defer u.connMu.Unlock()
	for c := range u.conns {
		c.Close()
	}
}

func (u *khatruPeer) up() { u.down.Store(false) }
