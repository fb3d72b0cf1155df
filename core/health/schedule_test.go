package health

import (
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestG02_8_BackoffDelays(t *testing.T) {
	s := DefaultSchedule()
	cases := []struct {
		n    int
		want time.Duration
	}{
		{0, 0}, {1, 5 * time.Second}, {2, 10 * time.Second}, {3, 20 * time.Second}, {4, 40 * time.Second},
		{10, 2560 * time.Second}, {11, time.Hour}, {12, time.Hour}, {1000, time.Hour},
	}
	for _, c := range cases {
		if got := s.Delay(c.n); got != c.want {
			t.Errorf("Delay(%d) = %s, want %s", c.n, got, c.want)
		}
	}
}

// TestG02_8_ScheduleThroughADayOfFailures walks a relay that never answers
// with a fake clock: it retries exactly at each backoff, goes hourly at the
// cap, is dead once it has failed for 24 h, and is then tried once a day.
func TestG02_8_ScheduleThroughADayOfFailures(t *testing.T) {
	s := DefaultSchedule()
	clk := clock.NewFake(epoch)
	var st State
	var waits []time.Duration
	for i := 0; i < 200 && s.StatusOf(st) != Dead; i++ {
		st = s.Fail(st, clk.Now())
		next := s.NextAttempt(st, clk.Now())
		waits = append(waits, next.Sub(clk.Now()))
		clk.Set(next)
	}
	if s.StatusOf(st) != Dead {
		t.Fatalf("after %d failures status is %s, want dead", len(waits), s.StatusOf(st))
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560}
	for i, w := range want {
		if waits[i] != w*time.Second {
			t.Fatalf("wait %d = %s, want %s (all: %v)", i+1, waits[i], w*time.Second, waits)
		}
	}
	for i := len(want); i < len(waits)-1; i++ {
		if waits[i] != time.Hour {
			t.Fatalf("wait %d = %s, want hourly after the cap", i+1, waits[i])
		}
	}
	if got := waits[len(waits)-1]; got != 24*time.Hour {
		t.Fatalf("wait after becoming dead = %s, want 24h", got)
	}
	if failing := st.LastFailure.Sub(st.FirstFailure); failing < 24*time.Hour || failing > 25*time.Hour {
		t.Fatalf("dead after %s of failures, want just past 24h", failing)
	}
	// A dead relay that answers becomes healthy at once.
	st = s.Succeed(st, clk.Now(), 30*time.Millisecond)
	if s.StatusOf(st) != Healthy || !s.NextAttempt(st, clk.Now()).Equal(clk.Now()) {
		t.Fatalf("after success: status %s, next %v", s.StatusOf(st), s.NextAttempt(st, clk.Now()))
	}
}

func TestG02_8_RateLimitCooldown(t *testing.T) {
	s := DefaultSchedule()
	now := epoch
	st := s.RateLimit(State{}, now)
	if got := s.NextAttempt(st, now); !got.Equal(now.Add(65 * time.Second)) {
		t.Fatalf("next attempt after rate limit = %v, want +65s", got)
	}
	if s.StatusOf(st) != Healthy {
		t.Fatalf("a rate limit is not a failure, status %s", s.StatusOf(st))
	}
	// An earlier cooldown never shortens a later one, and the longer of
	// backoff and cooldown wins.
	st = s.RateLimit(st, now.Add(-time.Minute))
	st = s.Fail(st, now)
	if got := s.NextAttempt(st, now); !got.Equal(now.Add(65 * time.Second)) {
		t.Fatalf("cooldown 65s vs backoff 5s: next %v", got)
	}
	if got := s.NextAttempt(st, now.Add(2*time.Minute)); !got.Equal(now.Add(2 * time.Minute)) {
		t.Fatalf("after both passed next should be now, got %v", got)
	}
}

func TestScheduleDefaultsFillZeroFields(t *testing.T) {
	s := Schedule{Base: time.Second}.withDefaults()
	if s.Base != time.Second || s.Max != time.Hour || s.Cooldown != 65*time.Second {
		t.Fatalf("withDefaults = %+v", s)
	}
}
