package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fiatjaf/khatru"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// Serve answers HTTP on ln until ctx ends, then shuts down gracefully: it
// stops accepting connections, refuses new writes, waits (up to
// Options.ShutdownGrace) for in-flight store writes and HTTP requests such as
// git pushes, closes the websockets and returns. The caller closes the store
// afterwards. A nil error means every in-flight write finished.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	tl := &trackingListener{Listener: ln, conns: s.hijacked}
	srv := &http.Server{
		Handler: s.handler,
		// Slow-header clients are cut early; there is deliberately no
		// Read/WriteTimeout: clones and pushes stream for minutes.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		ConnState: func(c net.Conn, state http.ConnState) {
			if state == http.StateHijacked {
				s.hijacked.markHijacked(c)
			}
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(tl) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("relay: serve: %w", err)
	case <-ctx.Done():
	}
	return s.shutdown(srv, errc)
}

func (s *Server) shutdown(srv *http.Server, served <-chan error) error {
	grace := s.opts.ShutdownGrace
	graceCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timer := s.clock.AfterFunc(grace, cancel)
	defer timer.Stop()

	idle := s.writes.drain()
	shutdownDone := make(chan error, 1)
	// Shutdown closes the listener at once, then waits for plain HTTP
	// requests (git) to finish; hijacked websockets are ours to close.
	go func() { shutdownDone <- srv.Shutdown(graceCtx) }()

	var errs []error
	select {
	case <-idle:
	case <-graceCtx.Done():
		errs = append(errs, fmt.Errorf("relay: shutdown: %d store writes still in flight after %s", s.writes.inflight(), grace))
	}
	s.closeWebsockets()
	if err := <-shutdownDone; err != nil {
		errs = append(errs, fmt.Errorf("relay: shutdown: HTTP requests still running after %s: %w", grace, err))
		if cerr := srv.Close(); cerr != nil {
			errs = append(errs, fmt.Errorf("relay: closing HTTP server: %w", cerr))
		}
	}
	<-served
	s.log.Info("relay stopped", "subscriptions_left", s.subs.len())
	return errors.Join(errs...)
}

// closeWebsockets says goodbye (close 1001) to khatru's connections, gives
// the frames a moment to leave, then closes every hijacked connection, which
// also ends connections held by a websocket front.
func (s *Server) closeWebsockets() {
	var wg sync.WaitGroup
	for _, ws := range s.conns.list() {
		wg.Add(1)
		go func(ws *khatru.WebSocket) {
			defer wg.Done()
			// 1001 "going away"
			frame := append([]byte{0x03, 0xe9}, "relay shutting down"...)
			_ = ws.WriteMessage(closeMessage, frame)
		}(ws)
	}
	sent := make(chan struct{})
	go func() { wg.Wait(); close(sent) }()
	select {
	case <-sent:
	case <-s.clock.After(time.Second):
	}
	s.hijacked.closeHijacked()
}

// closeMessage is the websocket close frame opcode (RFC 6455 §11.8).
const closeMessage = 8

// writeGate counts in-flight store writes and refuses new ones once
// shutdown has begun, so that "all writes done" cannot be overtaken.
type writeGate struct {
	mu       sync.Mutex
	n        int
	draining bool
	idle     chan struct{}
	gauge    prometheus.Gauge
}

func newWriteGate(g prometheus.Gauge) *writeGate { return &writeGate{gauge: g} }

func (w *writeGate) begin() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.draining {
		return false
	}
	w.n++
	w.gauge.Inc()
	return true
}

func (w *writeGate) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n--
	w.gauge.Dec()
	if w.draining && w.n == 0 && w.idle != nil {
		close(w.idle)
		w.idle = nil
	}
}

// drain stops new writes; the channel closes when the last one ends.
func (w *writeGate) drain() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.draining = true
	ch := make(chan struct{})
	if w.n == 0 {
		close(ch)
	} else {
		w.idle = ch
	}
	return ch
}

func (w *writeGate) inflight() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// connTracker knows khatru's open websockets (OnConnect / OnDisconnect).
type connTracker struct {
	mu sync.Mutex
	m  map[*khatru.WebSocket]struct{}
}

func newConnTracker() *connTracker { return &connTracker{m: make(map[*khatru.WebSocket]struct{})} }

func (c *connTracker) add(ctx context.Context) {
	if ws := khatru.GetConnection(ctx); ws != nil {
		c.mu.Lock()
		c.m[ws] = struct{}{}
		c.mu.Unlock()
	}
}

func (c *connTracker) remove(ctx context.Context) {
	if ws := khatru.GetConnection(ctx); ws != nil {
		c.mu.Lock()
		delete(c.m, ws)
		c.mu.Unlock()
	}
}

func (c *connTracker) list() []*khatru.WebSocket {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*khatru.WebSocket, 0, len(c.m))
	for ws := range c.m {
		out = append(out, ws)
	}
	return out
}

// hijackTracker remembers accepted connections until they close, so that
// shutdown can close the hijacked (websocket) ones, which http.Server forgets.
type hijackTracker struct {
	mu    sync.Mutex
	conns map[*trackedConn]bool // value: hijacked
}

func newHijackTracker() *hijackTracker {
	return &hijackTracker{conns: make(map[*trackedConn]bool)}
}

func (h *hijackTracker) markHijacked(c net.Conn) {
	tc, ok := c.(*trackedConn)
	if !ok {
		return
	}
	h.mu.Lock()
	if _, open := h.conns[tc]; open {
		h.conns[tc] = true
	}
	h.mu.Unlock()
}

func (h *hijackTracker) closeHijacked() {
	h.mu.Lock()
	var victims []*trackedConn
	for c, hijacked := range h.conns {
		if hijacked {
			victims = append(victims, c)
		}
	}
	h.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
}

type trackingListener struct {
	net.Listener
	conns *hijackTracker
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, owner: l.conns}
	l.conns.mu.Lock()
	l.conns.conns[tc] = false
	l.conns.mu.Unlock()
	return tc, nil
}

type trackedConn struct {
	net.Conn
	owner *hijackTracker
	once  sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.conns, c)
		c.owner.mu.Unlock()
	})
	return c.Conn.Close()
}
