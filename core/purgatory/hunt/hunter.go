package hunt

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

// Hunter fetches missing git data for held events. Create it with New, run
// Run under the scheduler, feed it with Need, and tell it with Forget or
// ForgetEvent when held events leave purgatory.
type Hunter struct {
	opts Options
	self selfHosts
	sc   SyncContext
	clk  clock.Clock
	log  hclog.Logger
	m    *metrics

	// The mailbox is the only state shared with other goroutines.
	mu     sync.Mutex
	inbox  []any
	notify chan struct{}

	// busy counts queued messages and running (not parked) tasks; when it
	// drops to zero the hunter can make no progress until time passes or a
	// caller acts. Tests use it to advance a fake clock deterministically.
	busy    atomic.Int64
	settled chan struct{}

	running atomic.Bool
	stats   atomic.Pointer[Stats]

	// Owned by the goroutine in Run.
	ctx      context.Context
	entries  map[string]*entry
	domains  map[string]*domainState
	naughty  map[string]time.Time // host -> skipped until
	timer    clock.Timer
	timerAt  time.Time
	lastScan time.Time
	fetches  uint64
	fetched  uint64
}

// Stats is a snapshot of the hunter, published by its owner goroutine.
type Stats struct {
	Repos       int            // repositories queued
	Hunting     int            // repositories in a round
	Waiting     int            // repositories waiting for a throttle slot
	NeededOIDs  int            // distinct objects still missing
	InFlight    map[string]int // fetches in flight per domain
	Naughty     []string       // hosts skipped, sorted
	Fetches     uint64         // fetches started since New
	OIDsFetched uint64         // needed objects that arrived by fetch
}

// New returns a Hunter; its timers follow e.Clock.
func New(opts Options, e env.Env) (*Hunter, error) {
	sc := opts.Sync
	if sc == nil {
		return nil, errors.New("hunt: nil SyncContext")
	}
	e = e.OrDefaults()
	clk, log := e.Clock, e.Log
	m, err := newMetrics(e.Metrics)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	h := &Hunter{
		opts: opts, self: parseSelves(opts.SelfHosts), sc: sc, clk: clk, log: log, m: m,
		notify:  make(chan struct{}, 1),
		settled: make(chan struct{}, 1),
		ctx:     context.Background(),
		entries: map[string]*entry{},
		domains: map[string]*domainState{},
		naughty: map[string]time.Time{},
	}
	h.stats.Store(&Stats{InFlight: map[string]int{}})
	if opts.Disabled == nil {
		m.enabled.Set(1)
	}
	return h, nil
}

// Need queues n (debounced per repository). It never blocks.
func (h *Hunter) Need(n Need) { h.post(msgNeed{n: n, at: h.clk.Now()}) }

// Forget drops repo from the queue and stops its fetches: no held event of
// it remains (released or expired).
func (h *Hunter) Forget(repo nip34.RepoRef) { h.post(msgForget{repo: repo}) }

// ForgetEvent drops the objects only eventID needed; the repository leaves
// the queue when no object remains needed.
func (h *Hunter) ForgetEvent(repo nip34.RepoRef, eventID string) {
	h.post(msgForget{repo: repo, eventID: eventID, one: true})
}

// Recheck queues every hosted repository whose refs drifted from its latest
// accepted state (GRASP-02: fetch missing git data no less than every 1 h).
// Run it from the scheduler at least hourly.
func (h *Hunter) Recheck(ctx context.Context) error {
	if h.opts.Disabled != nil {
		return nil
	}
	needs, err := h.sc.Drifted(ctx)
	if err != nil {
		return fmt.Errorf("hunt recheck: list drifted repositories: %w", err)
	}
	for _, n := range needs {
		n.FromSync = true
		h.Need(n)
	}
	if len(needs) > 0 {
		h.log.Info("recheck queued drifted repositories", "repos", len(needs))
	}
	return nil
}

// Stats returns the latest snapshot.
func (h *Hunter) Stats() Stats { return *h.stats.Load() }

// Run is the owner loop. It returns nil when ctx is cancelled, and may be
// called again after it returned (the scheduler restarts loops).
func (h *Hunter) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("hunt: Run is already running")
	}
	defer h.running.Store(false)
	if h.opts.Disabled != nil {
		h.log.Error("the git-data hunter is off: held events wait for a push", "reason", h.opts.Disabled)
		<-ctx.Done()
		return nil
	}
	h.ctx = ctx
	h.log.Info("starting git-data hunt loop", "interval", h.opts.Config.HuntInterval.D())
	defer func() {
		if h.timer != nil {
			h.timer.Stop()
			h.timer, h.timerAt = nil, time.Time{}
		}
	}()
	for {
		n := h.drain()
		h.tick()
		h.publish()
		h.done(int64(n))
		select {
		case <-ctx.Done():
			return nil
		case <-h.notify:
		}
	}
}

func (h *Hunter) post(m any) {
	if h.opts.Disabled != nil {
		return // nothing would ever take it from the inbox
	}
	h.busy.Add(1)
	h.mu.Lock()
	h.inbox = append(h.inbox, m)
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

func (h *Hunter) done(n int64) {
	if n != 0 && h.busy.Add(-n) == 0 {
		select {
		case h.settled <- struct{}{}:
		default:
		}
	}
}

// drain handles every queued message and returns how many it handled.
func (h *Hunter) drain() int {
	total := 0
	for {
		h.mu.Lock()
		batch := h.inbox
		h.inbox = nil
		h.mu.Unlock()
		if len(batch) == 0 {
			return total
		}
		for _, m := range batch {
			h.handle(m)
		}
		total += len(batch)
	}
}

func (h *Hunter) handle(m any) {
	switch m := m.(type) {
	case msgNeed:
		h.applyNeed(m)
	case msgForget:
		h.applyForget(m)
	case msgWake:
		// tick runs after every drain
	case msgPresent:
		h.applyPresent(m)
	case msgAcquire:
		h.applyAcquire(m)
	case msgResult:
		h.applyResult(m)
	case msgReport:
		h.applyReport(m)
	default:
		h.log.Error("hunt: unknown message", "type", fmt.Sprintf("%T", m))
	}
}

// tick starts due rounds, serves domains whose rate window opened, and arms
// one timer for the next thing that time alone will make due.
func (h *Hunter) tick() {
	for i := 0; i < 4; i++ {
		now := h.clk.Now()
		h.scan(now)
		for name, d := range h.domains {
			if len(d.waiting) > 0 {
				h.pump(name)
			}
		}
		at := h.nextWake(now)
		if at.IsZero() {
			h.arm(time.Time{}, now)
			return
		}
		if at.After(now) {
			h.arm(at, now)
			return
		}
	}
}

func (h *Hunter) nextWake(now time.Time) time.Time {
	var at time.Time
	earliest := func(t time.Time) {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	floor := h.lastScan.Add(h.opts.Config.HuntInterval.D())
	for _, e := range h.entries {
		if e.active {
			continue
		}
		t := e.next
		if !h.lastScan.IsZero() && t.Before(floor) {
			t = floor
		}
		earliest(t)
	}
	for name, d := range h.domains {
		if t, ok := d.opening(now, h.limits(name)); ok {
			earliest(t)
		}
	}
	return at
}

// arm keeps one timer for the next wake. It is an AfterFunc that posts a
// message, so a fake clock's Advance counts the wake as work before it
// returns.
func (h *Hunter) arm(at, now time.Time) {
	if at.Equal(h.timerAt) && (h.timer != nil) == !at.IsZero() {
		return
	}
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.timerAt = at
	if at.IsZero() {
		return
	}
	h.timer = h.clk.AfterFunc(at.Sub(now), func() { h.post(msgWake{}) })
}

func (h *Hunter) publish() {
	now := h.clk.Now()
	s := &Stats{InFlight: map[string]int{}, Fetches: h.fetches, OIDsFetched: h.fetched}
	oids := map[string]struct{}{}
	for _, e := range h.entries {
		s.Repos++
		if e.active {
			s.Hunting++
		}
		if e.waiting != nil {
			s.Waiting++
		}
		for o := range e.needs {
			oids[o] = struct{}{}
		}
	}
	s.NeededOIDs = len(oids)
	for name, d := range h.domains {
		if d.idle(now) {
			delete(h.domains, name)
			h.m.forgetDomain(d)
			continue
		}
		if d.inFlight > 0 {
			s.InFlight[name] = d.inFlight
		}
	}
	for host, until := range h.naughty {
		if !now.Before(until) {
			delete(h.naughty, host)
			h.log.Info("host left the naughty list", "host", host)
			continue
		}
		s.Naughty = append(s.Naughty, host)
	}
	sort.Strings(s.Naughty)
	h.m.queue.Set(float64(s.Repos))
	h.m.naughty.Set(float64(len(s.Naughty)))
	h.stats.Store(s)
}
