package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/health"
	"github.com/grasp-dev/grasp/core/netguard"
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
	reg := s.env.Metrics
	hc := s.cfg.Health
	tracker, err := health.New(health.Options{
		Schedule: health.Schedule{
			Base: hc.BaseBackoff.D(), Max: hc.MaxBackoff.D(), DeadAfter: hc.DeadAfter.D(), DeadRetry: hc.DeadRetry.D(),
			Cooldown: sc.RateLimitCooldown.D(),
		},
		KV: s.store.Side(),
	}, s.env.Named("health"))
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	bootstrap := bootstrapURLs(sc.BootstrapRelays)
	dial, catchUpDial := guardedDialers(sc.ConnectPrivateAddresses, bootstrap)
	cu, err := catchup.New(catchup.Config{Logger: s.log.Named("sync").Named("catchup"), Registerer: reg, Clock: s.clk, Dial: catchUpDial})
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	pool, err := conn.New(conn.Options{
		Sink:    s.relay,
		Local:   catchup.StoreLocal{Store: s.store.Events()},
		Dial:    dial,
		CatchUp: cu,
		Clock:   s.clk, Logger: s.log.Named("sync"), Registerer: reg,
	})
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	mgr, err := gsync.NewManager(gsync.Options{
		Conns:     pool,
		Health:    tracker,
		Selector:  sel, // relay selection plugins; nil keeps every listed relay
		Self:      svc.RelayURL(),
		Bootstrap: bootstrap,
		Archive:   s.cfg.Grasp.ArchiveAll,
		// "Lists this server" has one definition: the one the GRASP rules
		// apply to announcements.
		ListsSelf: func(evt *nostr.Event) bool {
			a, err := nip34.ParseAnnouncement(evt)
			return err == nil && nip34.ListsService(a, svc)
		},
		BatchWindow:             sc.BatchWindow.D(),
		ConsolidateAbove:        sc.ConsolidateAbove,
		TagsPerFilter:           sc.TagsPerFilter,
		QuickReconnectWindow:    sc.QuickReconnectWindow.D(),
		DailyMin:                sc.DailyMin.D(),
		DailyMax:                sc.DailyMax.D(),
		DisconnectCheckInterval: sc.DisconnectCheckInterval.D(),
		Negentropy:              sc.Negentropy,
	}, s.env.Named("sync"))
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	pool.Bind(mgr)
	sub, err := gsync.NewSubscriber(gsync.SubscriberOptions{
		Manager: mgr, Events: s.store.Events(), Held: s.purg, Spawn: s.background,
	}, s.env.Named("sync"))
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	s.relay.OnStored(sub.OnStored)
	s.purg.OnHold = append(s.purg.OnHold, sub.OnHold)
	s.purg.OnRemove = append(s.purg.OnRemove, sub.OnRemove)
	s.sched.Go("sync", func(ctx context.Context) error {
		err := sub.Run(ctx)
		// The manager has stopped asking; close the connections and wait,
		// so no synced event reaches the store after this returns.
		pool.Stop()
		return err
	})
	return nil
}

// guardedDialers returns the dialers sync uses: relay URLs come from
// anyone's announcements, so unless the operator allows it they may not
// reach internal addresses (core/netguard checks the address actually
// connected to). Bootstrap relays are the operator's own choice and are
// dialled as given.
func guardedDialers(allowPrivate bool, bootstrap []string) (conn.Dialer, catchup.Dialer) {
	if allowPrivate {
		return conn.HTTPDialer(nil), catchup.HTTPDialer(nil)
	}
	trusted := map[string]bool{}
	for _, u := range bootstrap {
		trusted[u] = true
	}
	guarded := netguard.HTTPClient()
	pick := func(url string) *http.Client {
		if n, err := nip34.NormalizeRelayURL(url); err == nil && trusted[n] {
			return nil
		}
		return guarded
	}
	return func(ctx context.Context, url string) (*websocket.Conn, error) {
			return conn.HTTPDialer(pick(url))(ctx, url)
		}, func(ctx context.Context, url string) (catchup.Conn, error) {
			return catchup.HTTPDialer(pick(url))(ctx, url)
		}
}

// bootstrapURLs normalises the configured bootstrap relays (a URL without a
// scheme gets wss://); entries that are not relay URLs were refused when the
// config was validated, and are skipped here.
func bootstrapURLs(in []string) []string {
	out := make([]string, 0, len(in))
	for _, u := range in {
		if n, err := nip34.NormalizeRelayURL(u); err == nil {
			out = append(out, n)
		}
	}
	return out
}
