package githttp

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/refusals"
)

// slots bounds the git processes serving requests, in total and per client
// IP (audit 2026-11, F08: 150 trickling clients held 150 upload-pack
// processes, 612 MB; 30 clones took 1.1 GB). A request over its IP's share
// is refused at once: one client needs a request or two at a time, so
// more is a misbehaving or hostile client. A request over the total waits
// up to queueWait for a process to finish, so a burst of honest clones (a
// CI fleet) is served a moment later instead of failing; only then is it
// refused. Waiting requests count toward their IP's share, so one client
// cannot queue without bound either.
type slots struct {
	clk       clock.Clock
	total     int
	perIP     int
	queueWait time.Duration

	// refusals counts the requests refused for the operator's
	// per-minute line (nil: not counted).
	refusals *refusals.Log

	mu      sync.Mutex
	running int
	byIP    map[string]int // running and waiting, per client IP
	freed   chan struct{}  // closed and replaced whenever a slot frees
}

func newSlots(clk clock.Clock, total, perIP int, queueWait time.Duration) *slots {
	return &slots{clk: clk, total: total, perIP: perIP, queueWait: queueWait,
		byIP: map[string]int{}, freed: make(chan struct{})}
}

// slotError is a refused request: what the client is told (its Error, a
// rate-limited: or error: outcome), and the HTTP status for requests
// answered outside the git protocol.
type slotError struct {
	status int
	res    outcome.Result
	reason string // metrics label
}

func (e *slotError) Error() string { return e.res.Text() }

// acquire takes a process slot for a request from ip, waiting for one at
// most queueWait (or until ctx ends). The returned func gives it back.
func (s *slots) acquire(ctx context.Context, ip string) (func(), *slotError) {
	release, refused := s.take(ctx, ip)
	switch {
	case refused == nil:
	case refused.reason == "busy_ip":
		s.refusals.Count(ip, refusals.GitBusyIP)
	default:
		s.refusals.Count(ip, refusals.GitBusy)
	}
	return release, refused
}

func (s *slots) take(ctx context.Context, ip string) (func(), *slotError) {
	s.mu.Lock()
	if s.byIP[ip] >= s.perIP {
		n := s.byIP[ip]
		s.mu.Unlock()
		return nil, &slotError{status: http.StatusTooManyRequests, reason: "busy_ip",
			res: outcome.New(outcome.RateLimited, fmt.Sprintf("%d git requests from your address are already running here (limit %d); try again when they finish", n, s.perIP))}
	}
	s.byIP[ip]++
	var deadline clock.Timer
	for s.running >= s.total {
		if s.queueWait < 0 {
			s.leaveLocked(ip)
			s.mu.Unlock()
			return nil, s.busy()
		}
		if deadline == nil {
			deadline = s.clk.NewTimer(s.queueWait)
			defer deadline.Stop()
		}
		freed := s.freed
		s.mu.Unlock()
		select {
		case <-freed:
			s.mu.Lock()
			continue
		case <-deadline.C():
		case <-ctx.Done():
		}
		s.mu.Lock()
		if s.running < s.total {
			break
		}
		s.leaveLocked(ip)
		s.mu.Unlock()
		return nil, s.busy()
	}
	s.running++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.running--
			s.leaveLocked(ip)
			close(s.freed)
			s.freed = make(chan struct{})
			s.mu.Unlock()
		})
	}, nil
}

func (s *slots) busy() *slotError {
	return &slotError{status: http.StatusServiceUnavailable, reason: "busy",
		res: outcome.New(outcome.Error, fmt.Sprintf("this server is running its maximum of %d git processes; try again in a minute", s.total))}
}

func (s *slots) leaveLocked(ip string) {
	if s.byIP[ip]--; s.byIP[ip] <= 0 {
		delete(s.byIP, ip)
	}
}

// inUse reports the running processes (for tests and metrics).
func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}
