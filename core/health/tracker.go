package health

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/relaysync"
)

// KV is the durable table the tracker persists to (store.Side satisfies it).
type KV interface {
	Put(ctx context.Context, bucket, key string, val []byte, ttl time.Duration) error
	Delete(ctx context.Context, bucket, key string) error
	Scan(ctx context.Context, bucket string, fn func(key string, val []byte, expires time.Time) error) error
}

// Options configure a Tracker.
type Options struct {
	// Config is the [health] section: the backoff schedule, how long a
	// relay's record outlives its last news (forget_after) and how many
	// records are kept (max_records). Zero fields take config's defaults.
	Config config.Health
	// Cooldown is the pause after a rate limit (sync.rate_limit_cooldown);
	// zero takes config's default.
	Cooldown time.Duration
	KV       KV     // nil: kept in memory only
	Bucket   string // default "relay-health"
	// Labelled are the relays whose status and failures are exported per
	// relay: the operator's (bootstrap) relays. Every other relay URL is a
	// stranger's choice, so it only counts in grasp_health_relays (audit
	// F14: 1000 listed relays made ~4000 series that were never deleted).
	Labelled []string
}

// record is one relay's state and when anything last happened to it.
type record struct {
	st      State
	touched time.Time
}

// Tracker holds every relay's State. It is safe for concurrent use: the sync
// manager updates it, relay selection reads it. Updates never wait for the
// disk: changed records are written in the background, one write per relay
// however often it changed meanwhile.
type Tracker struct {
	s        Schedule
	kv       KV
	bucket   string
	ttl      time.Duration
	max      int
	labelled map[string]bool
	log      hclog.Logger

	mu        sync.Mutex
	states    map[string]record
	dirty     map[string]bool // url -> true: write, false: delete
	lastSweep time.Time

	flushMu  sync.Mutex // one flush pass at a time
	flushing atomic.Bool
	flushWG  sync.WaitGroup

	status   *prometheus.GaugeVec // labelled relays only
	failures *prometheus.GaugeVec // labelled relays only
	classes  *prometheus.GaugeVec // by status
	dead     prometheus.Gauge
}

// New builds a Tracker and loads the persisted states; e names its logger
// and takes its metrics.
func New(opts Options, e env.Env) (*Tracker, error) {
	e = e.OrDefaults()
	c := opts.Config.WithDefaults()
	s := Schedule{Base: c.BaseBackoff.D(), Max: c.MaxBackoff.D(), DeadAfter: c.DeadAfter.D(), DeadRetry: c.DeadRetry.D(), Cooldown: opts.Cooldown}
	t := &Tracker{
		s: s.withDefaults(), kv: opts.KV, bucket: opts.Bucket, ttl: c.ForgetAfter.D(), max: c.MaxRecords, log: e.Log,
		labelled: map[string]bool{}, states: map[string]record{}, dirty: map[string]bool{},
		status: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_health_relay_status", Help: "Health of a bootstrap relay: 1 healthy, 2 backoff, 3 dead.",
		}, []string{"relay"}),
		failures: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_health_relay_failures", Help: "Consecutive connection failures of a bootstrap relay.",
		}, []string{"relay"}),
		classes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_health_relays", Help: "Relays with a health record, by status (healthy, backoff, dead).",
		}, []string{"status"}),
		dead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_health_relays_dead", Help: "Relays failing for longer than dead_after.",
		}),
	}
	for _, u := range opts.Labelled {
		if n, err := nip34.NormalizeRelayURL(u); err == nil {
			t.labelled[n] = true
		}
	}
	if t.bucket == "" {
		t.bucket = "relay-health"
	}
	for _, c := range []prometheus.Collector{t.status, t.failures, t.classes, t.dead} {
		if err := e.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("register health metrics: %w", err)
		}
	}
	if t.kv != nil {
		err := t.kv.Scan(context.Background(), t.bucket, func(key string, val []byte, expires time.Time) error {
			var st State
			if err := json.Unmarshal(val, &st); err != nil {
				// One corrupt record must not lose the others; the relay
				// simply starts healthy.
				t.log.Warn("ignoring unreadable health record", "relay", key, "error", err)
				return nil
			}
			touched := time.Time{}
			if !expires.IsZero() {
				touched = expires.Add(-t.ttl)
			}
			t.states[key] = record{st: st, touched: touched}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("load relay health from %s: %w", t.bucket, err)
		}
	}
	t.mu.Lock()
	t.trim(time.Time{})
	t.observe()
	t.mu.Unlock()
	return t, nil
}

// Schedule is the policy in force.
func (t *Tracker) Schedule() Schedule { return t.s }

// State returns the relay's state and whether anything is recorded.
func (t *Tracker) State(url string) (State, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.states[url]
	return r.st, ok
}

// Len is the number of relays with a record.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.states)
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
	t.update(url, now, func(st State) State { return t.s.Succeed(st, now, latency) })
}

// Failed records a failed or lost connection.
func (t *Tracker) Failed(url string, now time.Time) {
	t.update(url, now, func(st State) State { return t.s.Fail(st, now) })
}

// RateLimited records a rate-limit answer.
func (t *Tracker) RateLimited(url string, now time.Time) {
	t.update(url, now, func(st State) State { return t.s.RateLimit(st, now) })
}

// Health is the value relay selectors see in their candidates.
func (t *Tracker) Health(url string) relaysync.Health {
	st, _ := t.State(url)
	return relaysync.Health{OK: t.s.StatusOf(st) == Healthy, Failures: st.Failures, LatencyMs: st.LatencyMs, LastOK: st.LastOK}
}

func (t *Tracker) update(url string, now time.Time, f func(State) State) {
	t.mu.Lock()
	prev := t.states[url].st
	st := f(prev)
	t.states[url] = record{st: st, touched: now}
	t.dirty[url] = true
	t.trim(now)
	t.observe()
	t.mu.Unlock()
	// One line per change of class, never per attempt: an operator sees a
	// relay back off, die and come back.
	if was, is := t.s.StatusOf(prev), t.s.StatusOf(st); was != is {
		t.log.Info("relay "+is.String(), "relay", url, "was", was.String(), "failures", st.Failures)
	}
	t.persist()
}

// trim forgets records idle for longer than forget_after (checked at most
// once a minute of now) and, above max_records, the longest idle ones that
// are not labelled. Called with mu held; now zero skips the idle check.
func (t *Tracker) trim(now time.Time) {
	if !now.IsZero() && now.Sub(t.lastSweep) >= time.Minute {
		t.lastSweep = now
		for u, r := range t.states {
			if !r.touched.IsZero() && now.Sub(r.touched) > t.ttl {
				t.forget(u)
			}
		}
	}
	for len(t.states) > t.max {
		oldest, found := "", false
		for u, r := range t.states {
			if t.labelled[u] {
				continue
			}
			if !found || r.touched.Before(t.states[oldest].touched) || (r.touched.Equal(t.states[oldest].touched) && u < oldest) {
				oldest, found = u, true
			}
		}
		if !found {
			return
		}
		t.forget(oldest)
	}
}

func (t *Tracker) forget(url string) {
	delete(t.states, url)
	t.dirty[url] = false
}

// observe refreshes the gauges. Called with mu held.
func (t *Tracker) observe() {
	var n [Dead + 1]int
	for u, r := range t.states {
		s := t.s.StatusOf(r.st)
		n[s]++
		if t.labelled[u] {
			t.status.WithLabelValues(u).Set(float64(s))
			t.failures.WithLabelValues(u).Set(float64(r.st.Failures))
		}
	}
	for _, s := range []Status{Healthy, Backoff, Dead} {
		t.classes.WithLabelValues(s.String()).Set(float64(n[s]))
	}
	t.dead.Set(float64(n[Dead]))
}

// persist starts a background flush unless one is running.
func (t *Tracker) persist() {
	if t.kv == nil || !t.flushing.CompareAndSwap(false, true) {
		return
	}
	t.flushWG.Add(1)
	go func() {
		defer t.flushWG.Done()
		for {
			t.Flush()
			t.flushing.Store(false)
			// an update between the last pass and the flag is picked up
			// here rather than stranded
			t.mu.Lock()
			more := len(t.dirty) > 0
			t.mu.Unlock()
			if !more || !t.flushing.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// Flush writes every changed record now. Losing a health record only costs
// some politeness after a restart, so failures are logged, not returned.
func (t *Tracker) Flush() {
	if t.kv == nil {
		return
	}
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	for {
		t.mu.Lock()
		if len(t.dirty) == 0 {
			t.mu.Unlock()
			return
		}
		batch := t.dirty
		t.dirty = map[string]bool{}
		vals := make(map[string]State, len(batch))
		for u, put := range batch {
			if put {
				vals[u] = t.states[u].st
			}
		}
		t.mu.Unlock()
		for u, put := range batch {
			var err error
			if put {
				var val []byte
				if val, err = json.Marshal(vals[u]); err == nil {
					err = t.kv.Put(context.Background(), t.bucket, u, val, t.ttl)
				}
			} else {
				err = t.kv.Delete(context.Background(), t.bucket, u)
			}
			if err != nil {
				t.log.Warn("persisting relay health failed", "relay", u, "error", err)
			}
		}
	}
}

// Close waits for background writes and writes what is left; call it before
// the KV closes.
func (t *Tracker) Close() {
	t.flushWG.Wait()
	t.Flush()
}

var _ relaysync.HealthTracker = (*Tracker)(nil)
