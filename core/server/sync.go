package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/health"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/relay"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/relaysync/catchup"
	"github.com/grasp-dev/grasp/core/relaysync/conn"
)

// The relay answers sync peers' events with typed outcomes, which the pool
// counts by (held, duplicate, stored).
var _ conn.Accepter = (*relay.Server)(nil)

// startSync wires GRASP-02 event sync: the relay's and purgatory's hooks
// feed whichever sync stack runs now (none on a follower), and syncTerm,
// run by the leader (leader.go), builds the stack: the relay health tracker
// (persisted in the side tables), the connection layer (events enter
// through the relay's Ingest, the same pipeline as client events), the sync
// manager and the self-subscriber. A new leader builds a new stack; its
// subscriber replays the stored and held announcements, so nothing observed
// before is missed. With sync disabled it does nothing.
func (s *Server) startSync(svc nip34.Service, sel relaysync.RelaySelector) {
	if !s.cfg.Sync.Enabled {
		return
	}
	s.syncSvc, s.syncSel = svc, sel
	s.relay.OnStored(func(ctx context.Context, evt *nostr.Event) {
		if t := s.syncNow.Load(); t != nil {
			t.sub.OnStored(ctx, evt)
		}
	})
	s.purg.OnHold = append(s.purg.OnHold, func(e purgatory.Entry) {
		if t := s.syncNow.Load(); t != nil {
			t.sub.OnHold(e)
		}
	})
	s.purg.OnRemove = append(s.purg.OnRemove, func(e purgatory.Entry, why string) {
		if t := s.syncNow.Load(); t != nil {
			t.sub.OnRemove(e, why)
		}
	})
}

// syncStack is one leadership term's sync.
type syncStack struct {
	mgr    *relaysync.Manager
	health *health.Tracker
	sub    *relaysync.Subscriber
}

// syncTerm runs GRASP-02 sync until ctx ends (this instance stops leading
// or the server stops), then closes the connections, waits, and writes the
// health records still pending, so no synced event reaches the store after
// it returns. Its metrics are unregistered with it, for the next term.
func (s *Server) syncTerm(ctx context.Context) error {
	sc := s.cfg.Sync
	svc := s.syncSvc
	reg := &scopedRegisterer{Registerer: s.env.Metrics}
	defer reg.unregisterAll()
	e := s.env
	e.Metrics = reg
	// bootstrap relays are normalised where they are compared (nip34)
	bootstrap := sc.BootstrapRelays
	tracker, err := health.New(health.Options{
		Config: s.cfg.Health, Cooldown: sc.RateLimitCooldown.D(), KV: s.store.Side(), Labelled: bootstrap,
	}, e.Named("health"))
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	defer tracker.Close()
	lim := s.cfg.Relay.Limits
	syncEnv := e.Named("sync")
	dial, catchUpDial := conn.GuardedDialers(sc.ConnectPrivateAddresses, bootstrap, lim)
	cu, err := catchup.New(catchup.Config{Dial: catchUpDial, Limits: lim}, syncEnv.Named("catchup"))
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	pool, err := conn.New(conn.Options{
		Sink:    s.relay,
		Local:   catchup.StoreLocal{Store: s.store.Events()},
		Dial:    dial,
		CatchUp: cu,
		Limits:  lim,
	}, syncEnv)
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	defer pool.Stop()
	mgr, err := relaysync.NewManager(relaysync.Options{
		Conns:    pool,
		Health:   tracker,
		Selector: s.syncSel, // relay selection plugins; nil keeps every listed relay
		Self:     svc.RelayURLs(),
		Config:   sc,
		// "Synced here" has one definition: hosted here, as the GRASP
		// rules decide it (it lists this server, or GRASP-05 archives it:
		// core/archive).
		Hosted: func(evt *nostr.Event) (bool, bool) {
			a, err := nip34.ParseAnnouncement(evt)
			if err != nil {
				return false, false
			}
			v := s.roster.View(context.Background(), a.Identifier, "")
			vd := s.archive.Decide(a, func(pk string) (nip34.Announcement, bool) {
				e, ok := v.Latest(pk)
				return e.Announcement, ok
			})
			return vd.HasRepo(), vd == archive.Archived
		},
	}, syncEnv)
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	pool.Bind(mgr)
	sub, err := relaysync.NewSubscriber(relaysync.SubscriberOptions{
		Manager: mgr, Events: s.store.Events(), Held: s.purg, Spawn: s.background,
		// GRASP-08: a private repository's events are never synced.
		Private: func(evt *nostr.Event) bool { return s.vis.Readers(context.Background(), evt) != nil },
		// The replay read every root event and reply in the store (most of
		// an archive): what it allocated is garbage now, and the runtime
		// would keep it mapped up to its heap goal (issue 27 part 2).
		Replayed: returnStartupMemory(s.log, s.memWatch),
	}, syncEnv)
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	s.syncNow.Store(&syncStack{mgr: mgr, health: tracker, sub: sub})
	defer s.syncNow.Store(nil)
	return sub.Run(ctx)
}

// scopedRegisterer registers into the process registry and remembers what
// it registered, so a part built once per leadership term can leave the
// registry as it found it.
type scopedRegisterer struct {
	prometheus.Registerer
	mu   sync.Mutex
	done []prometheus.Collector
}

func (r *scopedRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.done = append(r.done, c)
	r.mu.Unlock()
	return nil
}

func (r *scopedRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *scopedRegisterer) unregisterAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.done {
		r.Registerer.Unregister(c)
	}
	r.done = nil
}
