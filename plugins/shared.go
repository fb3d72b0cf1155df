package plugins

import (
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/outcome"
)

// shared is the Go-backed state behind grasp.ratelimit and grasp.kv. JS
// globals exist once per runtime, so anything a plugin must see from every
// runtime of the pool (and across reloads) lives here. Keys are namespaced by
// plugin name by the caller.
type shared struct {
	clk     clock.Clock
	maxKeys int

	mu        sync.Mutex
	buckets   map[string]*bucket
	kv        map[string]kvEntry
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
	full   time.Duration // time to refill from empty, for idle sweeping
}

type kvEntry struct {
	val []byte // JSON; values never cross runtimes as goja objects
	exp time.Time
}

var errKVFull = outcome.Errorf(outcome.Error, "grasp.kv is full")

const (
	maxKVValue   = 64 << 10
	sweepEvery   = 10 * time.Second
	defaultKVTTL = time.Hour
)

func newShared(clk clock.Clock, maxKeys int) *shared {
	return &shared{clk: clk, maxKeys: maxKeys, buckets: map[string]*bucket{}, kv: map[string]kvEntry{}}
}

// allow takes one token from key's bucket (perMinute refill, burst capacity;
// burst <= 0 means perMinute). When the key table is full and nothing can be
// swept, new keys are refused: a flood of distinct keys must not turn the
// limiter off.
func (s *shared) allow(key string, perMinute, burst float64) bool {
	if perMinute <= 0 {
		return false
	}
	if burst <= 0 {
		burst = perMinute
	}
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[key]
	if b == nil {
		if len(s.buckets) >= s.maxKeys {
			s.sweepLocked(now)
			if len(s.buckets) >= s.maxKeys {
				return false
			}
		}
		b = &bucket{tokens: burst, last: now}
		s.buckets[key] = b
	}
	rate := perMinute / float64(time.Minute)
	b.full = time.Duration(burst / rate)
	if el := now.Sub(b.last); el > 0 {
		b.tokens += float64(el) * rate
		b.last = now
	}
	if b.tokens > burst {
		b.tokens = burst
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sweepLocked drops refilled buckets and expired kv entries, at most once
// per sweepEvery so a full table does not cost O(n) per call.
func (s *shared) sweepLocked(now time.Time) {
	if !s.lastSweep.IsZero() && now.Sub(s.lastSweep) < sweepEvery {
		return
	}
	s.lastSweep = now
	for k, b := range s.buckets {
		if now.Sub(b.last) >= b.full {
			delete(s.buckets, k)
		}
	}
	for k, e := range s.kv {
		if !now.Before(e.exp) {
			delete(s.kv, k)
		}
	}
}

func (s *shared) get(key string) ([]byte, bool) {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.kv[key]
	if !ok {
		return nil, false
	}
	if !now.Before(e.exp) {
		delete(s.kv, key)
		return nil, false
	}
	return e.val, true
}

func (s *shared) set(key string, val []byte, ttl time.Duration) error {
	if len(val) > maxKVValue {
		return outcome.Errorf(outcome.Invalid, "grasp.kv value larger than 64 KiB")
	}
	if ttl <= 0 {
		ttl = defaultKVTTL
	}
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, exists := s.kv[key]; !exists && len(s.kv) >= s.maxKeys {
		s.sweepLocked(now)
		if len(s.kv) >= s.maxKeys {
			return errKVFull
		}
	}
	s.kv[key] = kvEntry{val: val, exp: now.Add(ttl)}
	return nil
}

func (s *shared) del(key string) {
	s.mu.Lock()
	delete(s.kv, key)
	s.mu.Unlock()
}
