// Package server assembles one grasp process from a config.Config: the
// store, purgatory, GRASP rules, git host, websocket gate, relay, metrics
// listener and scheduled loops, and carries out the GRASP-01 effects that
// connect them (see glue.go). It owns start-up order and graceful shutdown.
//
// It receives operator extensions (the JavaScript accept chain, relay
// selection, throttle tuning) as core interfaces: core never imports
// plugins/, cmd/grasp wires them.
package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	stdsync "sync"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	coreenv "github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/relay"
	"github.com/grasp-dev/grasp/core/scheduler"
	"github.com/grasp-dev/grasp/core/store"
	gsync "github.com/grasp-dev/grasp/core/sync"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/hashicorp/go-hclog"
)

// Build identifies the binary.
type Build struct {
	Version string
	Commit  string
}

// Extensions are the operator's customisations, as core interfaces.
type Extensions struct {
	// Accept is the operator's accept chain (JavaScript plugins); it runs
	// after the GRASP rules. nil: none.
	Accept policy.Acceptor
	// AcceptNames name the chain's links in the NIP-11 curation text.
	AcceptNames []string
	// Tuner adjusts per-domain git fetch limits (throttle plugins); nil:
	// defaults and tuning files only.
	Tuner purgatory.ThrottleTuner
	// Selector filters and orders the relays synced per repo (relay
	// selection plugins); nil: all of them.
	Selector gsync.RelaySelector
}

// Server is one running grasp.
type Server struct {
	cfg   config.Config
	log   hclog.Logger
	clk   clock.Clock
	build Build

	metrics  *metrics.Registry
	store    *store.Store
	purg     *purgatory.Purgatory
	repos    *git.Repos
	rules    *policy.Rules
	grasp    *grasp
	relay    *relay.Server
	sched    *scheduler.Scheduler
	throttle *throttle.Resolver

	// life ends when the server stops; background work that is not a
	// scheduled loop hangs on it so it never outlives the store.
	life      context.Context
	endLife   context.CancelFunc
	bg        stdsync.WaitGroup // background work hanging on life
	ln        net.Listener
	metricLn  net.Listener
	metricSrv *http.Server
	done      chan struct{}
	runErr    error
}

// Option adjusts construction (tests inject a fake clock).
type Option func(*options)

type options struct{ clk clock.Clock }

// WithClock replaces the wall clock for every timer of the server.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// New opens the store and builds every part; it does not listen yet.
func New(cfg config.Config, b Build, log hclog.Logger, ext Extensions, opt ...Option) (*Server, error) {
	o := options{clk: clock.New()}
	for _, f := range opt {
		f(&o)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := &Server{cfg: cfg, log: log, clk: o.clk, build: b, done: make(chan struct{})}
	s.life, s.endLife = context.WithCancel(context.Background())
	if err := s.assemble(ext); err != nil {
		s.closeStore()
		return nil, err
	}
	return s, nil
}

func (s *Server) assemble(ext Extensions) error {
	cfg := s.cfg
	s.metrics = metrics.New(s.build.Version, s.build.Commit)
	reg := s.metrics.Registerer()

	svc, err := nip34.ParseService(cfg.Server.PublicURL)
	if err != nil {
		return fmt.Errorf("server.public_url: %w", err)
	}
	lim := cfg.Relay.Limits
	st, err := store.New(store.Options{
		Dir:          cfg.Server.DataDir,
		Backend:      cfg.Store.Backend,
		PostgresURL:  cfg.Store.PostgresURL,
		Limits:       lim,
		MemTableMB:   cfg.Store.MemtableMB,
		BlockCacheMB: cfg.Store.BlockCacheMB,
	}, coreenv.Env{Clock: s.clk, Log: s.log.Named("store"), Metrics: reg})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	s.store = st
	events := st.Events()

	s.purg, err = purgatory.New(st.Side(), s.clk, s.log.Named("purgatory"), reg, purgatory.Options{
		TTL:            cfg.Purgatory.TTL.D(),
		PlaceholderTTL: cfg.Purgatory.NostrRefTTL.D(),
		ExpiredMemory:  cfg.Purgatory.ExpiredMemory.D(),
	})
	if err != nil {
		return err
	}
	s.repos, err = git.NewRepos(filepath.Join(cfg.Server.DataDir, "git"), git.RepoOptions{Logger: s.log.Named("git")})
	if err != nil {
		return err
	}
	s.grasp = newGrasp(s.log.Named("grasp"), s.clk, events, s.purg, s.repos)
	s.grasp.spawn = s.background

	var plugins policy.Chain
	if ext.Accept != nil {
		plugins = policy.Chain{ext.Accept}
	}
	popts := s.policyOptions(svc, plugins, ext.AcceptNames)
	s.rules, err = policy.New(popts, policy.Deps{
		Events: events, Held: s.grasp, Git: s.grasp,
		Logger: s.log.Named("policy"), Registerer: reg,
	})
	if err != nil {
		return err
	}
	s.grasp.rules = s.rules

	grasps := []string{"GRASP-01"}
	if cfg.Sync.Enabled {
		grasps = append(grasps, "GRASP-02")
	}
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
		Limits:             lim,
		Events:             events,
		Pipeline:           s.grasp,
		Effects:            s.grasp,
	}, coreenv.Env{Clock: s.clk, Log: s.log.Named("relay"), Metrics: reg})
	if err != nil {
		return err
	}
	s.grasp.publish = s.relay.Publish
	s.relay.HandleGit(git.NewHandler(git.Options{
		Logger: s.log.Named("git"), Registerer: reg, Clock: s.clk,
		PublicURL:    cfg.Server.PublicURL,
		MaxPushBytes: int64(cfg.Grasp.MaxPushMB) << 20,
	}, s.repos, s.grasp, s.grasp))

	s.sched = scheduler.New(s.clk, s.log.Named("scheduler"), reg)
	if err := s.startSync(svc, ext.Selector); err != nil {
		return err
	}
	s.sched.Every("purgatory-sweep", cfg.Purgatory.SweepInterval.D(), s.grasp.sweep)
	s.sched.Every("store-maintenance", 10*time.Minute, s.store.Maintain)
	// pushes run with receive.autogc off; packing happens here, off the
	// push path
	s.sched.Every("git-maintenance", time.Hour, s.grasp.maintainRepos)
	return s.assembleHunter(ext, reg)
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

// Start listens on server.listen (and metrics.listen) and serves in the
// background until ctx ends; Wait returns the outcome.
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Server.Listen, err)
	}
	s.ln = ln
	if s.cfg.Metrics.Enabled {
		mln, err := net.Listen("tcp", s.cfg.Metrics.Listen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen for metrics on %s: %w", s.cfg.Metrics.Listen, err)
		}
		s.metricLn = mln
		s.metricSrv = &http.Server{Handler: s.metrics.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go s.metricSrv.Serve(mln) // ends when the shutdown below closes it
	}
	s.sched.Start(ctx)
	s.grasp.requeueHeld(ctx)
	s.log.Info("grasp listening", "addr", ln.Addr().String(), "public_url", s.cfg.Server.PublicURL,
		"relay", s.cfg.RelayURL(), "data_dir", s.cfg.Server.DataDir, "metrics", s.metricsAddr())
	go func() {
		defer close(s.done)
		err := s.relay.Serve(ctx, ln)
		if s.metricSrv != nil {
			s.metricSrv.Close()
		}
		s.endLife()
		s.sched.Stop()
		if cerr := s.closeStore(); err == nil {
			err = cerr
		}
		s.runErr = err
		s.log.Info("grasp stopped")
	}()
	return nil
}

// Run serves until ctx ends, then shuts down gracefully: stop accepting,
// finish in-flight writes, stop the loops, close the store.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		s.closeStore()
		return err
	}
	return s.Wait()
}

// Wait blocks until the server has stopped.
func (s *Server) Wait() error {
	<-s.done
	return s.runErr
}

// Addr is the address the server listens on (after Start).
func (s *Server) Addr() string { return s.ln.Addr().String() }

func (s *Server) metricsAddr() string {
	if s.metricLn == nil {
		return "disabled"
	}
	return s.metricLn.Addr().String()
}

// background runs fn on its own goroutine, owned by the server: it gets
// the server's life context, and the store is closed only after it ends.
func (s *Server) background(fn func(ctx context.Context)) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		fn(s.life)
	}()
}

func (s *Server) closeStore() error {
	s.endLife()
	s.bg.Wait()
	if s.store == nil {
		return nil
	}
	return s.store.Close() // idempotent
}

// Events is the main event store (for read-only views such as the plugins'
// grasp.store).
func (s *Server) Events() eventstore.Store { return s.store.Events() }

// ThrottleChanged forgets memoised per-domain fetch limits, after the
// throttle plugins were reloaded.
func (s *Server) ThrottleChanged() { s.throttle.Invalidate() }
