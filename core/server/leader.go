package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/scheduler"
	"github.com/grasp-dev/grasp/core/store"
)

// assembleLeader registers the "leader" loop: the singletons (GRASP-02
// sync, the git-data hunter and its re-check, the purgatory sweep, store and
// git maintenance) run only on the instance holding the leader lease
// (store.Lead), which with badger is always this one. Followers serve relay
// and git traffic. grasp_leader is 1 on the leader.
func (s *Server) assembleLeader() error {
	s.leaderGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "grasp_leader",
		Help: "1 while this instance runs the singletons (sync, hunter, sweeps), 0 on a follower.",
	})
	if err := s.env.Metrics.Register(s.leaderGauge); err != nil {
		return err
	}
	s.sched.Go("leader", func(ctx context.Context) error {
		return s.store.Lead(ctx, store.LeadOptions{Lease: s.cfg.Store.LeaderLease.D(), OnChange: s.setLeading}, s.lead)
	})
	return nil
}

func (s *Server) setLeading(b bool) {
	s.leading.Store(b)
	if b {
		s.leaderGauge.Set(1)
	} else {
		s.leaderGauge.Set(0)
	}
}

// lead runs the singletons for one leadership term, until ctx ends.
func (s *Server) lead(ctx context.Context) {
	cfg := s.cfg
	ts := scheduler.New(scheduler.Options{}, s.env.Named("scheduler"))
	if cfg.Sync.Enabled {
		ts.Go("sync", s.syncTerm)
	}
	ts.Go("hunt", s.hunter.Run)
	ts.Every("hunt-recheck", cfg.Purgatory.RecheckInterval.D(), s.hunter.Recheck)
	ts.Every("purgatory-sweep", cfg.Purgatory.SweepInterval.D(), s.hosting.Sweep)
	ts.Every("store-maintenance", 10*time.Minute, s.store.Maintain)
	// pushes run with receive.autogc off; packing happens here, off the
	// push path
	ts.Every("git-maintenance", time.Hour, s.hosting.Maintain)
	// what waits for git data, whichever instance held it
	s.hosting.Requeue(ctx)
	ts.Start(ctx)
	<-ctx.Done()
	ts.Stop()
}

// leaderHunter is the hunter as the effects see it: asked only on the
// leader, where it runs; a follower's holds reach the leader's hunter
// through the shared purgatory (assembleFanout, HuntHeld).
type leaderHunter struct{ s *Server }

func (h leaderHunter) Need(n hunt.Need) {
	if h.s.leading.Load() && huntable(h.s, n) {
		h.s.hunter.Need(n)
	}
}

// huntable reports whether the hunter may fetch for n: never for a private
// repository (GRASP-08). The hunter sends no NIP-98 token, and asking
// another host for a private repository names it there; its data arrives
// by a member's push.
func huntable(s *Server, n hunt.Need) bool {
	return s.vis.RepoReaders(context.Background(), n.Repo) == nil
}

func (h leaderHunter) ForgetEvent(repo nip34.RepoRef, eventID string) {
	if h.s.leading.Load() {
		h.s.hunter.ForgetEvent(repo, eventID)
	}
}
