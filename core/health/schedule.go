// Package health owns relay health: the Healthy → Backoff → Dead schedule of
// reconnect attempts, rate-limit cooldowns, and their persistence so that a
// restart does not hammer relays that were failing. Decisions are pure
// functions of a State and the time; Tracker keeps one State per relay URL.
// It never opens connections itself.
package health

import (
	"time"

	"github.com/grasp-dev/grasp/core/config"
)

// Status is a relay's health class; the numbers are the metric values.
type Status int

const (
	Healthy Status = 1
	Backoff Status = 2
	Dead    Status = 3
)

func (s Status) String() string {
	switch s {
	case Healthy:
		return "healthy"
	case Backoff:
		return "backoff"
	case Dead:
		return "dead"
	}
	return "unknown"
}

// State is what is remembered about one relay.
type State struct {
	Failures      int       `json:"failures,omitempty"` // consecutive
	FirstFailure  time.Time `json:"first_failure,omitzero"`
	LastFailure   time.Time `json:"last_failure,omitzero"`
	LastOK        time.Time `json:"last_ok,omitzero"`
	CooldownUntil time.Time `json:"cooldown_until,omitzero"`
	LatencyMs     int64     `json:"latency_ms,omitempty"`
}

// Schedule is the backoff policy (seed v2): Base × 2^(n−1) after the n-th
// consecutive failure, capped at Max (so hourly once the cap is reached);
// after DeadAfter of continuous failure the relay is Dead and retried every
// DeadRetry; a rate limit pauses all requests for Cooldown.
type Schedule struct {
	Base      time.Duration
	Max       time.Duration
	DeadAfter time.Duration
	DeadRetry time.Duration
	Cooldown  time.Duration
}

// DefaultSchedule is config's (the seed's: 5 s, 1 h, 24 h, 24 h, 65 s).
func DefaultSchedule() Schedule {
	d := config.Default()
	h := d.Health
	return Schedule{Base: h.BaseBackoff.D(), Max: h.MaxBackoff.D(), DeadAfter: h.DeadAfter.D(), DeadRetry: h.DeadRetry.D(),
		Cooldown: d.Sync.RateLimitCooldown.D()}
}

func (s Schedule) withDefaults() Schedule {
	d := DefaultSchedule()
	if s.Base <= 0 {
		s.Base = d.Base
	}
	if s.Max <= 0 {
		s.Max = d.Max
	}
	if s.DeadAfter <= 0 {
		s.DeadAfter = d.DeadAfter
	}
	if s.DeadRetry <= 0 {
		s.DeadRetry = d.DeadRetry
	}
	if s.Cooldown <= 0 {
		s.Cooldown = d.Cooldown
	}
	return s
}

// Delay is the wait after the n-th consecutive failure.
func (s Schedule) Delay(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := s.Base
	for i := 1; i < n; i++ {
		if d >= s.Max/2 {
			return s.Max
		}
		d *= 2
	}
	return min(d, s.Max)
}

// StatusOf classifies a state.
func (s Schedule) StatusOf(st State) Status {
	switch {
	case st.Failures == 0:
		return Healthy
	case st.LastFailure.Sub(st.FirstFailure) >= s.DeadAfter:
		return Dead
	default:
		return Backoff
	}
}

// NextAttempt is the earliest time at which the relay may be contacted: now
// if nothing holds it back, else the end of its backoff or cooldown.
func (s Schedule) NextAttempt(st State, now time.Time) time.Time {
	next := now
	if st.Failures > 0 {
		wait := s.Delay(st.Failures)
		if s.StatusOf(st) == Dead {
			wait = s.DeadRetry
		}
		if t := st.LastFailure.Add(wait); t.After(next) {
			next = t
		}
	}
	if st.CooldownUntil.After(next) {
		next = st.CooldownUntil
	}
	return next
}

// Fail records a failed or lost connection.
func (s Schedule) Fail(st State, now time.Time) State {
	if st.Failures == 0 {
		st.FirstFailure = now
	}
	st.Failures++
	st.LastFailure = now
	return st
}

// Succeed records a connection that came up.
func (s Schedule) Succeed(st State, now time.Time, latency time.Duration) State {
	st.Failures = 0
	st.FirstFailure, st.LastFailure = time.Time{}, time.Time{}
	st.LastOK = now
	st.LatencyMs = latency.Milliseconds()
	return st
}

// RateLimit records a rate-limit NOTICE or CLOSED: no requests until the
// cooldown has passed, instead of retrying into the limit.
func (s Schedule) RateLimit(st State, now time.Time) State {
	if until := now.Add(s.Cooldown); until.After(st.CooldownUntil) {
		st.CooldownUntil = until
	}
	return st
}
