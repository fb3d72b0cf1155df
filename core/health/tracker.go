package health

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/env"
	gsync "github.com/grasp-dev/grasp/core/sync"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// KV is the durable table the tracker persists to (store.Side satisfies it).
type KV interface {
	Put(bucket, key string, val []byte, ttl time.Duration) error
	Scan(bucket string, fn func(key string, val []byte, expires time.Time) error) error
}

// Options configure a Tracker.
type Options struct {
	Schedule Schedule // zero fields take DefaultSchedule's
	KV       KV       // nil: kept in memory only
	Bucket   string   // default "relay-health"
	// TTL is how long a relay's record outlives its last update, so relays
	// nobody lists any more are forgotten; default 7 days (longer than a
	// dead relay's retry interval).
	TTL time.Duration
}

// Tracker holds every relay's State. It is safe for concurrent use: the sync
// manager updates it, relay selection reads it.
type Tracker struct {
	s      Schedule
	kv     KV
	bucket string
	ttl    time.Duration
	log    hclog.Logger

	mu     sync.Mutex
	states map[string]State

	status   *prometheus.GaugeVec
	failures *prometheus.GaugeVec
	dead     prometheus.Gauge
}

// New builds a Tracker and loads the persisted states; e names its logger
// and takes its metrics.
func New(opts Options, e env.Env) (*Tracker, error) {
	e = e.OrDefaults()
	t := &Tracker{
		s: opts.Schedule.withDefaults(), kv: opts.KV, bucket: opts.Bucket, ttl: opts.TTL, log: e.Log,
		states: map[string]State{},
		status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_health_relay_status", Help: "Relay health: 1 healthy, 2 backoff, 3 dead.",
		}, []string{"relay"}),
		failures: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_health_relay_failures", Help: "Consecutive connection failures of the relay.",
		}, []string{"relay"}),
		dead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_health_relays_dead", Help: "Relays failing for longer than dead_after.",
		}),
	}
	if t.bucket == "" {
		t.bucket = "relay-health"
	}
	if t.ttl <= 0 {
		t.ttl = 7 * 24 * time.Hour
	}
	for _, c := range []prometheus.Collector{t.status, t.failures, t.dead} {
		if err := e.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("register health metrics: %w", err)
		}
	}
	if t.kv != nil {
		err := t.kv.Scan(t.bucket, func(key string, val []byte, _ time.Time) error {
			var st State
			if err := json.Unmarshal(val, &st); err != nil {
				// One corrupt record must not lose the others; the relay
				// simply starts healthy.
				t.log.Warn("ignoring unreadable health record", "relay", key, "error", err)
				return nil
			}
			t.states[key] = st
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("load relay health from %s: %w", t.bucket, err)
		}
	}
	for url, st := range t.states {
		t.observe(url, st)
	}
	t.countDead()
	return t, nil
}

// Schedule is the policy in force.
func (t *Tracker) Schedule() Schedule { return t.s }

// State returns the relay's state and whether anything is recorded.
func (t *Tracker) State(url string) (State, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.states[url]
	return st, ok
}

// Status is the relay's health class.
func (t *Tracker) Status(url string) Status {
	st, _ := t.State(url)
	return t.s.StatusOf(st)
}

// NextAttempt is Schedule.NextAttempt for the relay.
func (t *Tracker) NextAttempt(url string, now time.Time) time.Time {
	st, _ := t.State(url)
	return t.s.NextAttempt(st, now)
}

// Succeeded records a connection that came up after latency.
func (t *Tracker) Succeeded(url string, now time.Time, latency time.Duration) {
	t.update(url, func(st State) State { return t.s.Succeed(st, now, latency) })
}

// Failed records a failed or lost connection.
func (t *Tracker) Failed(url string, now time.Time) {
	t.update(url, func(st State) State { return t.s.Fail(st, now) })
}

// RateLimited records a rate-limit answer.
func (t *Tracker) RateLimited(url string, now time.Time) {
	t.update(url, func(st State) State { return t.s.RateLimit(st, now) })
}

// Health is the value relay selectors see in their candidates.
func (t *Tracker) Health(url string) gsync.Health {
	st, _ := t.State(url)
	return gsync.Health{OK: t.s.StatusOf(st) == Healthy, Failures: st.Failures, LatencyMs: st.LatencyMs, LastOK: st.LastOK}
}

func (t *Tracker) update(url string, f func(State) State) {
	t.mu.Lock()
	prev := t.states[url]
	st := f(prev)
	t.states[url] = st
	// Persisting under the lock keeps the stored record the latest one
	// when two updates for a relay race.
	var err error
	if t.kv != nil {
		var val []byte
		if val, err = json.Marshal(st); err == nil {
			err = t.kv.Put(t.bucket, url, val, t.ttl)
		}
	}
	t.mu.Unlock()
	if err != nil {
		// Losing a health record only costs some politeness after a
		// restart; sync goes on.
		t.log.Warn("persisting relay health failed", "relay", url, "error", err)
	}
	// One line per change of class, never per attempt: an operator sees a
	// relay back off, die and come back.
	if was, now := t.s.StatusOf(prev), t.s.StatusOf(st); was != now {
		t.log.Info("relay "+now.String(), "relay", url, "was", was.String(), "failures", st.Failures)
	}
	t.observe(url, st)
	t.countDead()
}

func (t *Tracker) observe(url string, st State) {
	t.status.WithLabelValues(url).Set(float64(t.s.StatusOf(st)))
	t.failures.WithLabelValues(url).Set(float64(st.Failures))
}

func (t *Tracker) countDead() {
	t.mu.Lock()
	n := 0
	for _, st := range t.states {
		if t.s.StatusOf(st) == Dead {
			n++
		}
	}
	t.mu.Unlock()
	t.dead.Set(float64(n))
}

var _ gsync.HealthTracker = (*Tracker)(nil)
