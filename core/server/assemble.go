package server

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/relay"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/grasp-dev/grasp/core/scheduler"
)

// assemble builds the parts in dependency order: purgatory and the bare
// repos, the rules reading them, the hunter, the effects, the relay and git
// host, then the loops.
func (s *Server) assemble(ext Extensions) error {
	cfg := s.cfg
	svc, err := nip34.ParseService(cfg.Server.PublicURL)
	if err != nil {
		return fmt.Errorf("server.public_url: %w", err)
	}
	events := s.store.Events()
	s.purg, err = purgatory.New(purgatory.Options{
		KV:             s.store.Side(),
		TTL:            cfg.Purgatory.TTL.D(),
		PlaceholderTTL: cfg.Purgatory.NostrRefTTL.D(),
		ExpiredMemory:  cfg.Purgatory.ExpiredMemory.D(),
	}, s.env.Named("purgatory"))
	if err != nil {
		return err
	}
	s.repos, err = git.NewRepos(git.RepoOptions{Root: filepath.Join(cfg.Server.DataDir, "git")}, s.env.Named("git"))
	if err != nil {
		return err
	}
	var plugins policy.Chain
	if ext.Accept != nil {
		plugins = policy.Chain{ext.Accept}
	}
	// One roster for the rules and the effects: announcements are read by
	// author and the v3 maintainer rule applied in one place.
	rost, err := roster.New(roster.Options{Events: events, Held: s.purg}, s.env.Named("roster"))
	if err != nil {
		return err
	}
	popts := s.policyOptions(svc, plugins, ext.AcceptNames)
	popts.Events, popts.Held, popts.Git, popts.Roster = events, s.purg, s.repos, rost
	rules, err := policy.New(popts, s.env.Named("policy"))
	if err != nil {
		return err
	}
	gc, err := s.assembleHunter(ext)
	if err != nil {
		return err
	}
	s.hosting, err = hosting.New(hosting.Options{
		Events: events, Purgatory: s.purg, Repos: s.repos, Rules: rules, Hunter: s.hunter, Roster: rost,
		Publish: func(ctx context.Context, evt *nostr.Event) error { return s.relay.Publish(ctx, evt) },
		Ingest: func(ctx context.Context, evt *nostr.Event, meta policy.Meta) (bool, string) {
			return s.relay.Ingest(ctx, evt, meta)
		},
		Spawn: s.background,
	}, s.env.Named("hosting"))
	if err != nil {
		return err
	}
	gc.OnArrived, gc.FindDrifted = s.hosting.Arrived, s.hosting.Drifted

	if err := s.assembleRelay(popts, rules); err != nil {
		return err
	}
	s.relay.HandleGit(git.NewHandler(git.Options{
		Repos: s.repos, Authority: s.hosting, Hooks: s.hosting,
		PublicURL:    cfg.Server.PublicURL,
		MaxPushBytes: int64(cfg.Grasp.MaxPushMB) << 20,
	}, s.env.Named("git")))

	s.sched = scheduler.New(scheduler.Options{}, s.env.Named("scheduler"))
	if err := s.startSync(svc, ext.Selector); err != nil {
		return err
	}
	s.sched.Go("hunt", s.hunter.Run)
	s.sched.Every("hunt-recheck", cfg.Purgatory.RecheckInterval.D(), s.hunter.Recheck)
	s.sched.Every("purgatory-sweep", cfg.Purgatory.SweepInterval.D(), s.hosting.Sweep)
	s.sched.Every("store-maintenance", 10*time.Minute, s.store.Maintain)
	// pushes run with receive.autogc off; packing happens here, off the
	// push path
	s.sched.Every("git-maintenance", time.Hour, s.hosting.Maintain)
	return nil
}

func (s *Server) policyOptions(svc nip34.Service, plugins policy.Chain, names []string) policy.Options {
	g := s.cfg.Grasp
	return policy.Options{
		Service:           svc,
		EventBlacklist:    g.EventBlacklist,
		RepoWhitelist:     g.RepositoryWhitelist,
		RepoBlacklist:     g.RepositoryBlacklist,
		MaxReposPerPubkey: g.MaxReposPerPubkey,
		Plugins:           plugins,
		PluginNames:       names,
		PurgatoryTTL:      s.cfg.Purgatory.TTL.D(),
	}
}

// assembleRelay builds the relay (khatru's write hooks, the websocket gate,
// the NIP-11 document): every event goes through rules, their decision to
// the effects.
func (s *Server) assembleRelay(popts policy.Options, rules *policy.Rules) error {
	cfg := s.cfg
	grasps := []string{"GRASP-01"}
	if cfg.Sync.Enabled {
		grasps = append(grasps, "GRASP-02")
		if cfg.Sync.Outbox {
			grasps = append(grasps, "GRASP-03")
		}
	}
	var err error
	s.relay, err = relay.New(relay.Options{
		Name:               cfg.Relay.Name,
		Description:        cfg.Relay.Description,
		PubkeyHex:          cfg.Relay.Pubkey,
		Contact:            cfg.Relay.Contact,
		IconURL:            cfg.Relay.Icon,
		PublicURL:          cfg.Server.PublicURL,
		SoftwareURL:        "https://github.com/grasp-dev/grasp",
		Version:            s.build.Version,
		SupportedGrasps:    grasps,
		AcceptanceCriteria: policy.AcceptanceCriteria(popts),
		Curation:           policy.Curation(popts),
		Limits:             cfg.Relay.Limits,
		Events:             s.store.Events(),
		Pipeline:           rules,
		Effects:            s.hosting,
	}, s.env.Named("relay"))
	return err
}
