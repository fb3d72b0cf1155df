package server

import (
	"context"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/health"
	"github.com/grasp-dev/grasp/core/nip34"
	gsync "github.com/grasp-dev/grasp/core/sync"
	"github.com/grasp-dev/grasp/core/sync/catchup"
	"github.com/grasp-dev/grasp/core/sync/conn"
)

// startSync wires GRASP-02 event sync: the relay health tracker (persisted
// in the side tables), the connection layer (events enter through the
// relay's Ingest, the same pipeline as client events), the sync manager, and
// the self-subscriber that feeds it from the relay's and purgatory's hooks.
// It registers the "sync" loop with the scheduler, so Start runs it and
// shutdown stops it before the store closes. With sync disabled it does
// nothing.
func (s *Server) startSync(svc nip34.Service, sel gsync.RelaySelector) error {
	sc := s.cfg.Sync
	if !sc.Enabled {
		return nil
	}
	// bootstrap relays are normalised where they are compared (nip34)
	bootstrap := sc.BootstrapRelays
	tracker, err := health.New(health.Options{
		Config: s.cfg.Health, Cooldown: sc.RateLimitCooldown.D(), KV: s.store.Side(), Labelled: bootstrap,
	}, s.env.Named("health"))
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	lim := s.cfg.Relay.Limits
	syncEnv := s.env.Named("sync")
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
	mgr, err := gsync.NewManager(gsync.Options{
		Conns:    pool,
		Health:   tracker,
		Selector: sel, // relay selection plugins; nil keeps every listed relay
		Self:     svc.RelayURL(),
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
	s.syncMgr, s.health = mgr, tracker
	sub, err := gsync.NewSubscriber(gsync.SubscriberOptions{
		Manager: mgr, Events: s.store.Events(), Held: s.purg, Spawn: s.background,
		// GRASP-08: a private repository's events are never synced.
		Private: func(evt *nostr.Event) bool { return s.vis.Readers(context.Background(), evt) != nil },
	}, syncEnv)
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	s.relay.OnStored(sub.OnStored)
	s.purg.OnHold = append(s.purg.OnHold, sub.OnHold)
	s.purg.OnRemove = append(s.purg.OnRemove, sub.OnRemove)
	s.sched.Go("sync", func(ctx context.Context) error {
		err := sub.Run(ctx)
		// The manager has stopped asking; close the connections and wait,
		// so no synced event reaches the store after this returns, and
		// write the health records still pending.
		pool.Stop()
		tracker.Close()
		return err
	})
	return nil
}
