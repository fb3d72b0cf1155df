package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// Serve answers HTTP on ln until ctx ends, then shuts down gracefully: it
// stops accepting connections, refuses new writes, waits (up to
// Options.ShutdownGrace) for in-flight store writes and HTTP requests such as
// git pushes, closes the websockets and returns. The caller closes the store
// afterwards. A nil error means every in-flight write finished.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler: s.handler,
		// Slow-header clients are cut early; there is deliberately no
		// Read/WriteTimeout: clones and pushes stream for minutes.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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
	s.log.Info("relay stopped")
	return errors.Join(errs...)
}

// closeWebsockets says goodbye (close 1001) to every client websocket and
// closes them; http.Server forgets hijacked connections.
func (s *Server) closeWebsockets() { s.gate.Close() }

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
