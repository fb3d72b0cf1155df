package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/memlimit"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip86"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/pages"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/refusals"
	"github.com/grasp-dev/grasp/core/relay"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/grasp-dev/grasp/core/scheduler"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/grasp-dev/grasp/core/visibility"
)

// assemble builds the parts in dependency order: purgatory and the bare
// repos, the rules reading them, the hunter, the effects, the relay and git
// host, then the loops.
func (s *Server) assemble(ext Extensions) error {
	cfg := s.cfg
	svc, err := cfg.Service()
	if err != nil {
		return fmt.Errorf("server.public_url: %w", err)
	}
	clients, err := clientip.New(cfg.Server.TrustedProxies, cfg.Server.ClientPrefixV4, cfg.Server.ClientPrefixV6)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	// Every per-IP cap counts the client's key, its network (F23); an
	// X-Forwarded-For from an untrusted peer is logged now and then (F32).
	s.clientIP = clients.WarnUntrusted(s.env.Named("clientip").Log, s.clk).Key
	s.refusalLog = refusals.New(refusals.Options{}, s.env.Named("refusals"))
	events := s.store.Events()
	s.purg, err = purgatory.New(purgatory.Options{
		KV:             s.store.Side(),
		TTL:            cfg.Purgatory.TTL.D(),
		PlaceholderTTL: cfg.Purgatory.NostrRefTTL.D(),
		ExpiredMemory:  cfg.Purgatory.ExpiredMemory.D(),
		Quotas: purgatory.Quotas{
			MaxHeld:                       cfg.Purgatory.MaxHeld,
			MaxHeldPerRemote:              cfg.Purgatory.MaxHeldPerIP,
			MaxAnnouncements:              cfg.Purgatory.MaxHeldAnnouncements,
			MaxAnnouncementsPerRemote:     cfg.Purgatory.MaxHeldAnnouncementsPerIP,
			MaxAnnouncementsPerAuthor:     cfg.Purgatory.MaxHeldAnnouncementsPerPubkey,
			MaxAnnouncementsPerIdentifier: cfg.Purgatory.MaxHeldAnnouncementsPerIdentifier,
			MaxHeldPerRelay:               cfg.Purgatory.MaxHeldPerRelay,
			MaxAnnouncementsPerRelay:      cfg.Purgatory.MaxHeldAnnouncementsPerRelay,
		},
		PRsQuotas: purgatory.PRsQuotas{
			Bytes:          int64(cfg.Grasp.PRsMaxMB) << 20,
			BytesPerRemote: int64(cfg.Grasp.PRsMaxMBPerIP) << 20,
			BytesPerPubkey: int64(cfg.Grasp.PRsMaxMBPerPubkey) << 20,
			Repos:          cfg.Grasp.PRsMaxRepos,
			ReposPerRemote: cfg.Grasp.PRsMaxReposPerIP,
			ReposPerPubkey: cfg.Grasp.PRsMaxReposPerPubkey,
		},
		PlaceholderQuotas: purgatory.PlaceholderQuotas{
			PerRepo:        cfg.Purgatory.MaxPlaceholdersPerRepo,
			PerOwner:       cfg.Purgatory.MaxPlaceholdersPerPubkey,
			PerRemote:      cfg.Purgatory.MaxPlaceholdersPerIP,
			BytesPerRepo:   int64(cfg.Purgatory.MaxPlaceholderMBPerRepo) << 20,
			BytesPerOwner:  int64(cfg.Purgatory.MaxPlaceholderMBPerPubkey) << 20,
			BytesPerRemote: int64(cfg.Purgatory.MaxPlaceholderMBPerIP) << 20,
		},
	}, s.env.Named("purgatory"))
	if err != nil {
		return err
	}
	// With a shared store the repositories are shared too (server.git_dir)
	// and their locks must hold across instances.
	var locker git.Locker
	if l := s.store.RepoLocker(); l != nil {
		locker = l
	}
	s.repos, err = git.NewRepos(git.RepoOptions{Root: cfg.GitRoot(), Locker: locker}, s.env.Named("git"))
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
	// The operator's NIP-86 lists before visibility: their members read
	// what is private, like grasp.private_members.
	if err := s.assembleOperatorState(); err != nil {
		return err
	}
	if err := s.assembleVisibility(svc, rost); err != nil {
		return err
	}
	// GRASP-05: the one answer to "is this repository hosted here, and is
	// it an archive" for the rules, sync, hosting, git and NIP-11.
	g := cfg.Grasp
	s.archive, err = archive.New(archive.Options{
		All: g.ArchiveAll, Whitelist: g.ArchiveWhitelist, Hosts: g.ArchiveHosts, ReadOnly: g.ArchiveReadOnly, Service: svc,
	}, s.env.Named("archive"))
	if err != nil {
		return err
	}
	s.roster = rost
	popts := s.policyOptions(svc, plugins, ext.AcceptNames)
	// The operator's NIP-86 lists first, for every event whatever its
	// source (core/nip86).
	popts.Pre = append(policy.Chain{s.operator}, popts.Pre...)
	popts.Events, popts.Held, popts.Git, popts.Roster, popts.Archive = events, s.purg, s.repos, rost, s.archive
	popts.Usage = s.placeholderUsage
	rules, err := policy.New(popts, s.env.Named("policy"))
	if err != nil {
		return err
	}
	gc, err := s.assembleHunter(ext)
	if err != nil {
		return err
	}
	s.hosting, err = hosting.New(hosting.Options{
		Events: events, Purgatory: s.purg, Repos: s.repos, Rules: rules, Hunter: leaderHunter{s}, Roster: rost,
		Publish: func(ctx context.Context, evt *nostr.Event) error { return s.relay.Publish(ctx, evt) },
		Ingest: func(ctx context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result {
			return s.relay.Accept(ctx, evt, meta)
		},
		Spawn:   s.background,
		Archive: s.archive,
		Service: svc,
		PRsTTL:  cfg.Grasp.PRsTTL.D(),
	}, s.env.Named("hosting"))
	if err != nil {
		return err
	}
	// G06-8: /prs/ repositories a crash left without a ref go at start-up.
	if err := s.hosting.ScanPRs(s.life); err != nil {
		return fmt.Errorf("scan /prs/ repositories: %w", err)
	}
	gc.OnArrived = s.hosting.Arrived
	gc.FindDrifted = func(ctx context.Context) ([]hunt.Need, error) {
		needs, err := s.hosting.Drifted(ctx)
		return slices.DeleteFunc(needs, func(n hunt.Need) bool { return !huntable(s, n) }), err
	}

	if err := s.assembleRelay(popts, rules); err != nil {
		return err
	}
	if err := s.assembleOperatorEndpoint(svc); err != nil {
		return err
	}
	minBody := int64(cfg.Git.MinBodyBytes)
	if minBody == 0 {
		minBody = -1 // config's 0 is "no check"; githttp.Options' 0 is its default
	}
	queueWait := cfg.Git.QueueWait.D()
	if queueWait == 0 {
		queueWait = -1 // refuse at once
	}
	var prs githttp.PRsHost // nil: every /prs/ path is a 404 (G06-0)
	var prsQuota githttp.PRsQuota
	if cfg.Grasp.Grasp06 {
		prs, prsQuota = s.hosting, s.hosting
	}
	var caughtUp func(ctx context.Context) error // nil: alone on the store
	if s.store.Shared() {
		caughtUp = s.store.CaughtUp
	}
	s.refusals = githttp.NewRefusals(s.clk)
	gitHandler := githttp.NewHandler(githttp.Options{
		Repos: s.repos, Authority: s.hosting, Hooks: s.hosting, Private: s.vis, Service: svc,
		CaughtUp:          caughtUp,
		Placeholders:      s.hosting,
		ReadOnly:          s.hosting.ReadOnly,
		PRs:               prs,
		PRsQuota:          prsQuota,
		CheckSpace:        s.writable,
		MaxPushBytes:      int64(cfg.Grasp.MaxPushMB) << 20,
		MaxDuration:       cfg.Git.MaxPushDuration.D(),
		MaxFetchDuration:  cfg.Git.MaxFetchDuration.D(),
		MaxProcesses:      cfg.Git.MaxProcesses,
		MaxProcessesPerIP: cfg.Git.MaxProcessesPerIP,
		QueueWait:         queueWait,
		MinBodyBytes:      minBody,
		BodyRateWindow:    cfg.Git.BodyRateWindow.D(),
		ClientIP:          s.clientIP,
		Refusals:          s.refusals,
		RefusalLog:        s.refusalLog,
	}, s.env.Named("git"))
	s.relay.HandleGit(gitHandler)

	// GRASP-08: the pages serve no one signed in, so every event they read
	// is public (PublicEvents, F28; the discussion pages also ask Readers
	// of each event they show) and they show public repositories only.
	pg, err := pages.New(pages.Options{
		Service: svc, Name: cfg.Relay.Name, Description: cfg.Relay.Description, Version: s.build.Version,
		Repos: s.repos, Events: s.vis.PublicEvents(events), Roster: rost, Listed: s.vis.Listed, Readers: s.vis.Readers, ClientIP: s.clientIP,
		Facts: s.pageFacts(),
		// snapshots and raw files are git processes in the git handler's slots
		Snapshots: gitHandler.(githttp.Snapshots),
	}, s.env.Named("pages"))
	if err != nil {
		return err
	}
	s.relay.HandlePages(pg)
	s.relay.HandleRepoAddresses(pg.Shown) // NIP-AD: the repositories the pages show

	s.sched = scheduler.New(scheduler.Options{}, s.env.Named("scheduler"))
	s.sched.Every("refusal-log", time.Minute, func(context.Context) error { s.refusalLog.Flush(); return nil })
	// a store that has outgrown server.memory_limit_mb is told in the log
	s.memWatch = &memlimit.Watch{Log: s.log.Named("memory")}
	s.sched.Every("memory-limit", time.Minute, func(context.Context) error { s.memWatch.Check(); return nil })
	s.assembleFanout()
	s.startSync(svc, ext.Selector)
	if s.archive.Enabled() {
		s.sched.Every("archive-count", time.Minute, s.hosting.CountArchived)
	}
	return s.assembleLeader()
}

func (s *Server) policyOptions(svc nip34.Service, plugins policy.Chain, names []string) policy.Options {
	g := s.cfg.Grasp
	return policy.Options{
		Service:           svc,
		EventBlacklist:    g.EventBlacklist,
		RepoWhitelist:     g.RepositoryWhitelist,
		RepoBlacklist:     g.RepositoryBlacklist,
		MaxReposPerPubkey: g.MaxReposPerPubkey,
		RelayKey:          s.cfg.Relay.Pubkey,
		Plugins:           plugins,
		PluginNames:       names,
		PurgatoryTTL:      s.cfg.Purgatory.TTL.D(),
		GRASP06:           g.Grasp06,
	}
}

// assembleRelay builds the relay (its write path, the websocket gate,
// the NIP-11 document): every event goes through rules, their decision to
// the effects.
func (s *Server) assembleRelay(popts policy.Options, rules *policy.Rules) error {
	cfg := s.cfg
	grasps := []string{"GRASP-01"}
	if cfg.Sync.Enabled && !cfg.Grasp.Private {
		// a private service syncs nothing (no event of it may be named
		// to another relay)
		grasps = append(grasps, "GRASP-02")
		if cfg.Sync.Outbox {
			grasps = append(grasps, "GRASP-03")
		}
		// GRASP-05 implies GRASP-02 (config refuses archive mode without
		// sync or with grasp.private)
		if s.archive.Enabled() {
			grasps = append(grasps, "GRASP-05")
		}
	}
	if cfg.Grasp.Grasp06 {
		// never with grasp.private: config refuses the pair
		grasps = append(grasps, "GRASP-06")
	}
	// GRASP-08 only when privacy is offered: ngit takes any server listing
	// it for private transport (issue 23 part 5).
	if s.vis.Offered() {
		grasps = append(grasps, "GRASP-08")
	}
	var err error
	s.relay, err = relay.New(relay.Options{
		Name:               cfg.Relay.Name,
		Description:        cfg.Relay.Description,
		PubkeyHex:          cfg.Relay.Pubkey,
		Contact:            cfg.Relay.Contact,
		IconURL:            cfg.Relay.Icon,
		PublicURL:          cfg.Server.PublicURL,
		PublicURLAliases:   cfg.Server.PublicURLAliases,
		SoftwareURL:        "https://github.com/grasp-dev/grasp",
		Version:            s.build.Version,
		SupportedGrasps:    grasps,
		AcceptanceCriteria: policy.AcceptanceCriteria(popts),
		Curation:           policy.Curation(popts),
		Limits:             cfg.Relay.Limits,
		Events:             s.store.Events(),
		Shared:             s.store.Shared(),
		Pipeline:           spaceGuarded{Pipeline: rules, writable: s.writable},
		Effects:            s.hosting,
		Private:            s.vis,
		Record:             s.vis.Record,
		ClientIP:           s.clientIP,
		RefusalLog:         s.refusalLog,
		AuthRequired:       cfg.Grasp.Private,
		PushLimits: relay.PushLimits{
			MaxPushBytes:            int64(cfg.Grasp.MaxPushMB) << 20,
			PlaceholdersPerRepo:     cfg.Purgatory.MaxPlaceholdersPerRepo,
			PerPubkey:               cfg.Purgatory.MaxPlaceholdersPerPubkey,
			PerIP:                   cfg.Purgatory.MaxPlaceholdersPerIP,
			PlaceholderBytesPerRepo: int64(cfg.Purgatory.MaxPlaceholderMBPerRepo) << 20,
			BytesPerPubkey:          int64(cfg.Purgatory.MaxPlaceholderMBPerPubkey) << 20,
			BytesPerIP:              int64(cfg.Purgatory.MaxPlaceholderMBPerIP) << 20,
			PlaceholderTTLSeconds:   int64(cfg.Purgatory.NostrRefTTL.D().Seconds()),
		},
		PRsLimits: prsLimits(cfg.Grasp),
	}, s.env.Named("relay"))
	if err != nil {
		return err
	}
	// After the relay exists: its stored events and purgatory's held ones
	// keep visibility's memory of private announcements complete.
	s.relay.OnStored(func(_ context.Context, evt *nostr.Event) { s.vis.Observe(evt) })
	s.purg.OnHold = append(s.purg.OnHold, func(e purgatory.Entry) { s.vis.Observe(e.Event) })
	s.purg.OnRemove = append(s.purg.OnRemove, func(e purgatory.Entry, _ string) { s.vis.Observe(e.Event) })
	// A key that lost read access (a roster or grasp.private_members
	// changed, here or on another instance) loses what it has open.
	s.vis.OnRevoke(s.relay.Revoke)
	// The roster's index of who lists whom (G01-R2x: an invitee that names
	// nobody back is still found to be invited), fed at acceptance, then
	// loaded from what is already stored and held.
	s.relay.OnStored(func(_ context.Context, evt *nostr.Event) { s.roster.Observe(evt) })
	s.purg.OnHold = append(s.purg.OnHold, func(e purgatory.Entry) { s.roster.Observe(e.Event) })
	s.purg.OnRemove = append(s.purg.OnRemove, func(e purgatory.Entry, why string) {
		// Released or replaced versions stay indexed (stored now, or
		// superseded by a newer one Observe saw); what another instance
		// did ("elsewhere") is left to the check every answer gets.
		switch why {
		case "expired", "evicted", "deleted":
			s.roster.Forget(e.Event)
		}
	})
	return s.roster.Load(s.life)
}

// assembleVisibility builds GRASP-08's reader rule on the roster and the
// durable privacy record, and loads the record (building it on the first
// start). Its members are grasp.private_members and the relay's own key.
func (s *Server) assembleVisibility(svc nip34.Service, rost *roster.Source) error {
	g := s.cfg.Grasp
	var err error
	s.vis, err = visibility.New(visibility.Options{
		ServiceWide: g.Private, Offered: g.PrivateRepositories, Members: s.members(s.cfg),
		Records: s.store.Privacy(), Roster: rost, Events: s.store.Events(), Held: s.purg, Hosted: s.repos, Service: svc,
		Banned: s.operator,
	}, s.env.Named("visibility"))
	if err != nil {
		return err
	}
	return s.vis.Load(s.life)
}

// members are the keys that read everything private: the configured
// ones, the relay's own and those the operator added over NIP-86
// (addmember, issue 25 part 3). cfg is the configuration in force (a
// reload passes the new one).
func (s *Server) members(cfg config.Config) []string {
	out := privateMembers(cfg)
	for _, e := range s.operator.Entries(nip86.ListMembers) {
		out = append(out, e.Item)
	}
	return out
}

// privateMembers are the keys that read everything private: the
// configured ones and the relay's own.
func privateMembers(cfg config.Config) []string {
	members := append([]string(nil), cfg.Grasp.PrivateMembers...)
	if cfg.Relay.Pubkey != "" {
		members = append(members, cfg.Relay.Pubkey)
	}
	return members
}

// placeholderUsage is purgatory's placeholder count as the plugins see it
// (policy.Usage, ctx.usage).
func (s *Server) placeholderUsage(pubkey, remote string) policy.Usage {
	pk, ip, q := s.purg.PlaceholderUsage(pubkey, remote)
	return policy.Usage{
		Pubkey: policy.Use{Placeholders: pk.Placeholders, Bytes: pk.Bytes},
		IP:     policy.Use{Placeholders: ip.Placeholders, Bytes: ip.Bytes},
		Limits: policy.UsageLimits{
			PlaceholdersPerPubkey: q.PerOwner, PlaceholdersPerIP: q.PerRemote,
			BytesPerPubkey: q.BytesPerOwner, BytesPerIP: q.BytesPerRemote,
		},
	}
}

// spaceGuarded refuses the writes of a decision (store, hold) while the
// data directory is below its free-space watermark (audit F12: a full disk
// crashed badger) or the store is read-only (fulldisk.go); rejections and
// reads go on.
type spaceGuarded struct {
	policy.Pipeline
	writable func() error
}

func (p spaceGuarded) Decide(ctx context.Context, evt *nostr.Event, meta policy.Meta) policy.Decision {
	d := p.Pipeline.Decide(ctx, evt, meta)
	if d.Outcome != policy.Store && d.Outcome != policy.Hold {
		return d
	}
	if err := p.writable(); err != nil {
		return policy.Decision{Outcome: policy.Rejected, Msg: err.Error()}
	}
	return d
}

// assembleFanout follows the other instances sharing a postgres store:
// their stored events reach this instance's subscribers, their purgatory
// changes this instance's purgatory index. Without a shared store there
// is nothing to follow.
func (s *Server) assembleFanout() {
	if !s.store.Shared() {
		return
	}
	s.sched.Go("fanout", func(ctx context.Context) error {
		return s.store.Follow(ctx, store.Follower{
			Stored: func(evt *nostr.Event) {
				s.relay.Deliver(ctx, evt)
				s.recheckAfter(ctx, evt)
			},
			SideChanged: func(bucket, key string) {
				if bucket == store.PrivacyRepoBucket {
					// another instance changed a repository's privacy or
					// readers (GRASP-08): follow it, revoking here too
					s.vis.Reload(key)
					return
				}
				if bucket == nip86.Bucket {
					if err := s.operator.Reload(key); err != nil {
						s.log.Error("following another instance's NIP-86 change", "key", key, "error", err)
					}
					return
				}
				held, err := s.purg.Reload(ctx, bucket, key)
				if err != nil {
					s.log.Error("following another instance's purgatory change", "bucket", bucket, "error", err)
				}
				if held == nil {
					return
				}
				if s.leading.Load() {
					s.hosting.HuntHeld(ctx, *held)
				}
				s.recheckAfter(ctx, held.Event)
			},
			Resync: func() {
				s.vis.Resync()
				if err := s.operator.Resync(); err != nil {
					s.log.Error("reloading the NIP-86 lists after a lost LISTEN connection", "error", err)
				}
				if err := s.purg.Resync(ctx); err != nil {
					s.log.Error("reloading purgatory after a lost LISTEN connection", "error", err)
				}
			},
		})
	})
}

// prsLimits are the GRASP-06 /prs/ data quotas NIP-11 advertises; none
// without GRASP-06.
func prsLimits(g config.Grasp) relay.PRsLimits {
	if !g.Grasp06 {
		return relay.PRsLimits{}
	}
	return relay.PRsLimits{
		Bytes: int64(g.PRsMaxMB) << 20, BytesPerIP: int64(g.PRsMaxMBPerIP) << 20, BytesPerPubkey: int64(g.PRsMaxMBPerPubkey) << 20,
		Repos: g.PRsMaxRepos, ReposPerIP: g.PRsMaxReposPerIP, ReposPerPubkey: g.PRsMaxReposPerPubkey,
		TTLSeconds: int64(g.PRsTTL.D().Seconds()),
	}
}

// recheckAfter re-runs the states this instance refused of an identifier
// whose announcement another instance stored or holds: the refused-state
// index (core/roster) is each instance's own, the re-run is shared.
func (s *Server) recheckAfter(ctx context.Context, evt *nostr.Event) {
	if evt.Kind == nip34.KindAnnouncement {
		s.hosting.Recheck(ctx, evt.Tags.GetD())
	}
}
