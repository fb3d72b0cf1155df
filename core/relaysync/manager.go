package relaysync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Conns is how the manager acts on relay connections. The connection layer
// implements it and reports back through Manager.Connected, Disconnected,
// SubscriptionDone, SubscriptionClosed and Notice. The methods are called
// from the manager goroutine and must not block on the manager: start the
// work and return.
type Conns interface {
	// Connect opens a websocket to url; report Connected or Disconnected.
	Connect(url string)
	// Subscribe opens subscription subID with filters (one filter per
	// subscription here) and catches up per catchUp; report SubscriptionDone
	// when the stored events are in, then keep it open for live events.
	Subscribe(url, subID string, filters []nostr.Filter, catchUp CatchUp)
	// Unsubscribe sends CLOSE for subID.
	Unsubscribe(url, subID string)
	// Close drops the connection without reporting Disconnected.
	Close(url string)
}

// HealthTracker is the relay health tracker as the manager uses it
// (core/health implements it).
type HealthTracker interface {
	// NextAttempt is the earliest time to connect to or subscribe on url:
	// backoff after failures, the cooldown after a rate limit; a time not
	// after now means go ahead.
	NextAttempt(url string, now time.Time) time.Time
	Succeeded(url string, now time.Time, latency time.Duration)
	Failed(url string, now time.Time)
	RateLimited(url string, now time.Time)
	// Health is what a RelaySelector sees for url.
	Health(url string) Health
}

// Options configure a Manager.
type Options struct {
	Conns  Conns         // required
	Health HealthTracker // required: backoff and rate-limit cooldowns
	// Selector filters and orders each repository's relays; nil means all.
	Selector      RelaySelector
	SelectTimeout time.Duration // per Selector call; default 2s

	Self []string // this server's relay URLs (every public URL), never synced from
	// Hosted decides whether an accepted announcement's repository is
	// hosted here, i.e. synced: it lists this server, or GRASP-05 archives
	// it (archived; the server asks core/archive, and relay selection
	// plugins see the flag); nil compares its relays tag with Self.
	Hosted func(evt *nostr.Event) (hosted, archived bool)

	// Config is the [sync] section as loaded: bootstrap relays, the seed's
	// timers, negentropy and the relay caps. Zero numbers and durations
	// take config's defaults; Enabled and ConnectPrivateAddresses are the
	// wiring's business.
	Config config.Sync

	Rand func() float64 // in [0,1), for the daily timer; default math/rand/v2
}

func (o *Options) defaults() error {
	if o.Conns == nil {
		return errors.New("sync options: Conns is required")
	}
	if o.Health == nil {
		return errors.New("sync options: Health is required")
	}
	if o.Selector == nil {
		o.Selector = AllRelays{}
	}
	if o.SelectTimeout <= 0 {
		o.SelectTimeout = 2 * time.Second
	}
	o.Config = o.Config.WithDefaults()
	c := &o.Config
	// Consolidation packs into half the limit (layer 1 aside); it needs room
	// for one chunk of each of the four item groups: 4 × 3 filters.
	if c.ConsolidateAbove < 25 {
		return fmt.Errorf("sync options: consolidate_above %d is below the minimum of 25", c.ConsolidateAbove)
	}
	if c.DailyMax < c.DailyMin {
		return fmt.Errorf("sync options: daily_max %s is before daily_min %s", c.DailyMax, c.DailyMin)
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	self := make([]string, 0, len(o.Self))
	for _, u := range o.Self {
		n, err := nip34.NormalizeRelayURL(u)
		if err != nil {
			return fmt.Errorf("sync options: self: %w", err)
		}
		self = append(self, n)
	}
	o.Self = self
	return nil
}

// caps are the relay caps of the config.
func (o *Options) caps() Caps {
	return Caps{PerRepo: o.Config.MaxRelaysPerRepo, Total: o.Config.MaxRelays, Held: o.Config.MaxHeldRelays, Outbox: o.Config.MaxOutboxRelays}
}

// Manager is the sync actor: one goroutine (Run) owns RepoSyncIndex,
// RelaySyncIndex and PendingSyncIndex; everything else talks to it through
// its methods, which enqueue messages.
type Manager struct {
	o       Options
	clk     clock.Clock
	log     hclog.Logger
	conns   Conns
	health  HealthTracker
	m       *metrics
	inbox   chan func()
	stopped chan struct{}
	running chan struct{}
	once    sync.Once

	obsMu    sync.Mutex
	obs      []update
	obsArmed bool

	// owned by the Run goroutine
	repos     *RepoSyncIndex
	sel       Selection
	targets   map[string]Targets
	relays    RelaySyncIndex
	pending   PendingSyncIndex
	nextID    uint64
	nConn     int
	nPending  int
	allRelays bool
	capped    int // relays the caps leave out, last recompute
	nFilters  int // filters open on every relay
	outbox    *outboxState

	roles roles // published by the actor, read by Role from anywhere
}

// NewManager validates opts and builds a Manager; call Run to start it.
// Its timers follow e.Clock.
func NewManager(opts Options, e env.Env) (*Manager, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	e = e.OrDefaults()
	met, err := newMetrics(e.Metrics)
	if err != nil {
		return nil, fmt.Errorf("register sync metrics: %w", err)
	}
	_, all := opts.Selector.(AllRelays)
	return &Manager{
		o: opts, clk: e.Clock, log: e.Log, conns: opts.Conns, health: opts.Health, m: met,
		inbox: make(chan func(), 1024), stopped: make(chan struct{}), running: make(chan struct{}),
		repos: NewRepoSyncIndex(), sel: Selection{}, targets: map[string]Targets{},
		relays: RelaySyncIndex{}, pending: PendingSyncIndex{}, allRelays: all, outbox: newOutboxState(),
	}, nil
}

// Run is the actor loop. It connects the bootstrap relays, then handles
// messages and the disconnect check until ctx is done. Run once.
func (m *Manager) Run(ctx context.Context) error {
	started := false
	m.once.Do(func() { started = true })
	if !started {
		return errors.New("sync manager: Run called twice")
	}
	defer close(m.stopped)
	tick := m.clk.NewTicker(m.o.Config.DisconnectCheckInterval.D())
	defer tick.Stop()
	m.recomputeAll()
	close(m.running)
	for {
		select {
		case <-ctx.Done():
			m.shutdown()
			return nil
		case f := <-m.inbox:
			m.safely("message", f)
		case <-tick.C():
			m.safely("disconnect check", m.checkRelays)
		}
	}
}

// safely runs one step of the actor. A panic in one message must not end
// sync for the whole process (Run cannot be restarted: its channels are
// single-use), so it is logged with its stack and the actor goes on.
func (m *Manager) safely(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("sync manager step panicked; continuing", "step", what, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
}

// send queues f for the actor; it is dropped once Run has returned.
func (m *Manager) send(f func()) {
	select {
	case m.inbox <- f:
	case <-m.stopped:
	}
}

// Connected reports that the connection to url is up.
func (m *Manager) Connected(url string) { m.send(func() { m.onConnected(url) }) }

// Disconnected reports that connecting to url failed or the connection dropped.
func (m *Manager) Disconnected(url string, err error) {
	m.send(func() { m.onDisconnected(url, err) })
}

// SubscriptionDone reports EOSE (or finished negentropy) for subID on url.
func (m *Manager) SubscriptionDone(url, subID string) {
	m.send(func() { m.onDone(url, subID) })
}

// SubscriptionClosed reports a CLOSED from the relay for subID.
func (m *Manager) SubscriptionClosed(url, subID, reason string) {
	m.send(func() { m.onClosed(url, subID, reason) })
}

// Notice reports a NOTICE from url; a rate-limit notice starts a cooldown.
func (m *Manager) Notice(url, msg string) {
	m.send(func() {
		if IsRateLimit(msg) {
			m.health.RateLimited(url, m.clk.Now())
			m.log.Warn("relay asks us to slow down", "relay", url, "notice", msg)
		}
	})
}

// RelaySnapshot is one relay's state as reported by Snapshot.
type RelaySnapshot struct {
	URL                             string
	Status                          ConnStatus
	Bootstrap                       bool
	ConfirmedRepos, ConfirmedEvents int
	Filters, PendingBatches         int
	LastConnected                   time.Time
}

// Snapshot is a copy of the manager's state for readers outside the actor.
type Snapshot struct {
	Repos, RootEvents int
	Relays            []RelaySnapshot // ordered by URL
}

// Snapshot returns a copy of the current state. Because it is answered in
// message order, every message sent before it has been handled.
func (m *Manager) Snapshot(ctx context.Context) (Snapshot, error) {
	reply := make(chan Snapshot, 1)
	f := func() { reply <- m.snapshot() }
	select {
	case m.inbox <- f:
	case <-m.stopped:
		return Snapshot{}, errors.New("snapshot: sync manager stopped")
	case <-ctx.Done():
		return Snapshot{}, fmt.Errorf("snapshot: %w", ctx.Err())
	}
	select {
	case s := <-reply:
		return s, nil
	case <-m.stopped:
		return Snapshot{}, errors.New("snapshot: sync manager stopped")
	case <-ctx.Done():
		return Snapshot{}, fmt.Errorf("snapshot: %w", ctx.Err())
	}
}

func (m *Manager) snapshot() Snapshot {
	s := Snapshot{Repos: m.repos.Len(), RootEvents: m.repos.RootEventCount()}
	for _, rs := range m.relays {
		r, e := rs.ConfirmedCounts()
		s.Relays = append(s.Relays, RelaySnapshot{
			URL: rs.URL, Status: rs.Status, Bootstrap: rs.Bootstrap, ConfirmedRepos: r, ConfirmedEvents: e,
			Filters: rs.Filters, PendingBatches: len(m.pending[rs.URL]), LastConnected: rs.LastConnected,
		})
	}
	slices.SortFunc(s.Relays, func(a, b RelaySnapshot) int {
		if a.URL < b.URL {
			return -1
		}
		if a.URL > b.URL {
			return 1
		}
		return 0
	})
	return s
}

func (m *Manager) shutdown() {
	for _, rs := range m.relays {
		stopTimer(&rs.dailyTimer)
		stopTimer(&rs.reconnectTimer)
		if rs.Status != Disconnected {
			m.conns.Close(rs.URL)
		}
	}
}

func stopTimer(t *clock.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

func (m *Manager) newID(prefix string) string {
	m.nextID++
	return fmt.Sprintf("%s%x", prefix, m.nextID)
}

// IsRateLimit reports whether a NOTICE or CLOSED reason asks us to slow down.
func IsRateLimit(msg string) bool {
	return containsFold(msg, "rate-limit") || containsFold(msg, "rate limit") ||
		containsFold(msg, "ratelimit") || containsFold(msg, "too many") || containsFold(msg, "slow down")
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}
