package server

import (
	"context"
	"fmt"
	"github.com/coder/websocket"
	"github.com/grasp-dev/grasp/core/config"
	coreenv "github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/netguard"
	"github.com/hashicorp/go-hclog"
	"net/http"
	stdsync "sync"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/grasp-dev/grasp/core/health"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	gsync "github.com/grasp-dev/grasp/core/sync"
	"github.com/grasp-dev/grasp/core/sync/catchup"
	"github.com/grasp-dev/grasp/core/sync/conn"
	"github.com/nbd-wtf/go-nostr"
)

// historyPage is how many events one start-up history query reads.
const historyPage = 2000

// startSync wires GRASP-02 event sync: the relay health tracker (persisted
// in the side tables), the connection layer (events enter through the
// relay's Ingest, the same pipeline as client events), the sync manager,
// and the self-subscription that feeds it. It registers the "sync" loop
// with the scheduler, so Start runs it and shutdown stops it before the
// store closes; and a loop that registers announcements held in purgatory
// with the manager. With sync disabled it does nothing.
//
// The self-subscription has one code path: the relay's OnStored callback
// (client events, synced events, releases from purgatory) and, when the
// loop starts, the store's history both go to Manager.Observe. The callback
// is registered before the history is read, so nothing stored in between
// is missed; seeing an event twice is harmless.
func (s *Server) startSync(svc nip34.Service, sel gsync.RelaySelector) error {
	sc := s.cfg.Sync
	if !sc.Enabled {
		return nil
	}
	reg := s.metrics.Registerer()
	hc := s.cfg.Health
	tracker, err := health.New(health.Options{
		Schedule: health.Schedule{
			Base: hc.BaseBackoff.D(), Max: hc.MaxBackoff.D(), DeadAfter: hc.DeadAfter.D(), DeadRetry: hc.DeadRetry.D(),
			Cooldown: sc.RateLimitCooldown.D(),
		},
		KV: s.store.Side(), Logger: s.log, Registerer: reg,
	})
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	lim := s.cfg.Relay.Limits
	dial, catchUpDial := guardedDialers(sc.ConnectPrivateAddresses, bootstrapURLs(sc.BootstrapRelays), lim)
	syncEnv := coreenv.Env{Clock: s.clk, Log: s.log.Named("sync"), Metrics: reg}
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
		// Bootstrap relays from the config; a URL without a scheme gets wss://.
		Bootstrap: bootstrapURLs(sc.BootstrapRelays),
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
		Clock:                   s.clk,
		Logger:                  s.log,
		Registerer:              reg,
	})
	if err != nil {
		return fmt.Errorf("start sync: %w", err)
	}
	pool.Bind(mgr)
	events := s.store.Events()
	// A forgotten repo that comes back (its announcement stored again) is
	// re-added by Observe, but its root events stored before were observed
	// once and forgotten with it: replay them, off the writing goroutine.
	var forgottenMu stdsync.Mutex
	forgotten := map[string]bool{}
	s.grasp.forgetRepo = func(addr string) {
		forgottenMu.Lock()
		if len(forgotten) >= maxForgotten {
			// repos that never come back: forgetting them costs a returning
			// one its replay (its new root events still sync), not memory
			clear(forgotten)
		}
		forgotten[addr] = true
		forgottenMu.Unlock()
		mgr.Forget(addr)
	}
	s.relay.OnStored(func(_ context.Context, evt *nostr.Event) {
		mgr.Observe(evt)
		if evt.Kind != nip34.KindAnnouncement {
			return
		}
		addr := nip34.RepoRef{Pubkey: evt.PubKey, Identifier: evt.Tags.GetD()}.String()
		forgottenMu.Lock()
		back := forgotten[addr]
		delete(forgotten, addr)
		forgottenMu.Unlock()
		if back {
			s.background(func(ctx context.Context) { replayRoots(ctx, events, addr, mgr.Observe, s.log) })
		}
	})
	s.sched.Go("sync", func(ctx context.Context) error {
		errc := make(chan error, 1)
		go func() { errc <- mgr.Run(ctx) }()
		if err := replayHistory(ctx, events, mgr.Observe); err != nil && ctx.Err() == nil {
			// Repositories whose history could not be read are synced once
			// they next see an event; sync of the rest goes on.
			s.log.Error("reading stored announcements for sync failed", "error", err)
		}
		err := <-errc
		// The manager has stopped asking; close the connections and wait,
		// so no synced event reaches the store after this returns.
		pool.Stop()
		return err
	})
	// Held announcements are synced at the state-only level (the seed's
	// StateOnly: their relays connected for announcements and states, which
	// is how a state and then its git data arrive, G02-1); full sync of
	// their issues and comments starts once they are stored, so a flood of
	// announcements that never get data costs few subscriptions. They are
	// registered as they appear: purgatory has no hold callback.
	seen := map[string]bool{}
	every := sc.PurgatoryRegisterInterval.D()
	if every <= 0 {
		every = 5 * time.Second
	}
	s.sched.Every("sync-purgatory-register", every, func(context.Context) error {
		registerHeld(s.purg.Find, seen, mgr.ObserveHeld)
		return nil
	})
	return nil
}

// registerHeld observes the held announcements not observed yet; seen (owned
// by the one loop calling it) forgets ids no longer held, so it stays as
// small as purgatory.
func registerHeld(find func(keep func(*purgatory.Entry) bool) []purgatory.Entry, seen map[string]bool, observe func(*nostr.Event)) {
	held := find(func(e *purgatory.Entry) bool { return e.Event.Kind == nip34.KindAnnouncement })
	now := make(map[string]bool, len(held))
	for _, e := range held {
		now[e.Event.ID] = true
		if !seen[e.Event.ID] {
			observe(e.Event)
		}
	}
	clear(seen)
	for id := range now {
		seen[id] = true
	}
}

// guardedDialers returns the dialers sync uses: relay URLs come from
// anyone's announcements, so unless the operator allows it they may not
// reach internal addresses (core/netguard checks the address actually
// connected to). Bootstrap relays are the operator's own choice and are
// dialled as given.
func guardedDialers(allowPrivate bool, bootstrap []string, lim config.Limits) (conn.Dialer, catchup.Dialer) {
	if allowPrivate {
		return conn.HTTPDialer(nil), catchup.HTTPDialer(nil, lim)
	}
	trusted := map[string]bool{}
	norm := func(u string) string {
		if n, err := gsync.NormalizeRelayURL(u); err == nil {
			return n
		}
		return u
	}
	for _, u := range bootstrap {
		trusted[norm(u)] = true
	}
	guarded := netguard.HTTPClient()
	pick := func(url string) *http.Client {
		if trusted[norm(url)] {
			return nil
		}
		return guarded
	}
	return func(ctx context.Context, url string) (*websocket.Conn, error) {
			return conn.HTTPDialer(pick(url))(ctx, url)
		}, func(ctx context.Context, url string) (catchup.Conn, error) {
			return catchup.HTTPDialer(pick(url), lim)(ctx, url)
		}
}

// bootstrapURLs gives scheme-less entries wss://, as the config documents.
func bootstrapURLs(in []string) []string {
	out := make([]string, 0, len(in))
	for _, u := range in {
		if u == "" {
			continue
		}
		if !hasScheme(u) {
			u = "wss://" + u
		}
		out = append(out, u)
	}
	return out
}

func hasScheme(u string) bool {
	for i := 0; i < len(u); i++ {
		switch c := u[i]; {
		case c == ':':
			return i > 0 && len(u) > i+2 && u[i+1] == '/' && u[i+2] == '/'
		case c == '/' || c == '.':
			return false
		}
	}
	return false
}

// syncKinds are what the self-subscription follows: announcements and the
// root events layer 3 tracks.
func syncKinds() []int { return append([]int{nip34.KindAnnouncement}, gsync.RootKinds...) }

// maxForgotten bounds the memory of forgotten repos awaiting a return.
const maxForgotten = 10000

// replayRoots observes the stored root events of one repo again.
func replayRoots(ctx context.Context, events eventstore.Store, addr string, observe func(*nostr.Event), log hclog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, _, _, err := queryInto(ctx, events, nostr.Filter{Kinds: gsync.RootKinds, Tags: nostr.TagMap{"a": {addr}}}, observe); err != nil {
		log.Warn("replaying root events of a returning repo for sync", "repo", addr, "error", err)
	}
}

// replayHistory streams every stored announcement and root event to observe,
// newest first, in pages walked by until. A negentropy-marked query lifts
// the REQ cap (the store caps it at its negentropy maximum instead); a page
// that is all one second is read whole, then the walk continues below it.
func replayHistory(ctx context.Context, events eventstore.Store, observe func(*nostr.Event)) error {
	kinds := syncKinds()
	var until *nostr.Timestamp
	for {
		n, oldest, newest, err := queryInto(ctx, events, nostr.Filter{Kinds: kinds, Until: until, Limit: historyPage}, observe)
		if err != nil {
			return err
		}
		if n < historyPage {
			return nil
		}
		if oldest == newest {
			sec := oldest
			if _, _, _, err := queryInto(ctx, events, nostr.Filter{Kinds: kinds, Since: &sec, Until: &sec}, observe); err != nil {
				return err
			}
			if oldest == 0 {
				return nil
			}
			oldest--
		}
		// The page's oldest second is read again from the top: events share
		// it beyond the page, and observing one twice changes nothing.
		u := oldest
		until = &u
	}
}

func queryInto(ctx context.Context, events eventstore.Store, f nostr.Filter, observe func(*nostr.Event)) (n int, oldest, newest nostr.Timestamp, err error) {
	ch, err := events.QueryEvents(eventstore.SetNegentropy(ctx), f)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("query stored events for sync: %w", err)
	}
	for {
		select {
		case evt, ok := <-ch:
			if !ok {
				return n, oldest, newest, nil
			}
			if n == 0 || evt.CreatedAt < oldest {
				oldest = evt.CreatedAt
			}
			if evt.CreatedAt > newest {
				newest = evt.CreatedAt
			}
			n++
			observe(evt)
		case <-ctx.Done():
			return n, oldest, newest, fmt.Errorf("query stored events for sync: %w", ctx.Err())
		}
	}
}
