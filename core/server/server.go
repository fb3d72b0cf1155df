// Package server assembles one grasp process from a config.Config and what
// the composition root built before it (the metrics registry and the
// store): purgatory, the GRASP rules, the GRASP-01 effects (core/hosting),
// the relay (which builds the websocket gate) with the git host mounted,
// GRASP-02 sync, the git-data hunter, the metrics listener and the
// scheduled loops. Every part takes config.Limits as it is. It owns start-up
// order and graceful shutdown, and nothing else: it is wiring only.
//
// It receives operator extensions (the JavaScript accept chain, relay
// selection, throttle tuning) as core interfaces: core never imports
// plugins/, cmd/grasp wires them.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/diskspace"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/memlimit"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip86"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/refusals"
	"github.com/grasp-dev/grasp/core/relay"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/grasp-dev/grasp/core/scheduler"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/grasp-dev/grasp/core/visibility"
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
	Tuner throttle.Tuner
	// Selector filters and orders the relays synced per repo (relay
	// selection plugins); nil: all of them.
	Selector relaysync.RelaySelector
}

// Options are what the composition root hands the server.
type Options struct {
	Config config.Config
	Build  Build
	// Metrics is the process registry (metrics.New): every part registers
	// into it and the metrics listener serves it.
	Metrics *metrics.Registry
	// Store is the opened store (OpenStore). The server owns it from here:
	// it is closed when the server stops, or when New fails.
	Store      *store.Store
	Extensions Extensions
	// FreeSpace measures the bytes free under a directory for the
	// server.min_free_mb watermark; nil: statfs (tests inject a full disk).
	FreeSpace func(dir string) (uint64, error)
}

// Server is one running grasp.
type Server struct {
	cfg config.Config
	log hclog.Logger
	clk clock.Clock
	// memWatch compares the live heap with server.memory_limit_mb
	memWatch *memlimit.Watch
	env      env.Env
	build    Build

	metrics *metrics.Registry
	store   *store.Store
	purg    *purgatory.Purgatory
	repos   *git.Repos
	hosting *hosting.Hosting
	hunter  *hunt.Hunter
	// refusals remembers refused pushes for the repository pages
	refusals *githttp.Refusals
	// syncNow is the sync stack of the current leadership term (nil on a
	// follower, or with sync disabled); syncSvc and syncSel build it.
	syncNow atomic.Pointer[syncStack]
	syncSvc nip34.Service
	syncSel relaysync.RelaySelector
	// leading is set while this instance holds the leader lease.
	leading     atomic.Bool
	leaderGauge prometheus.Gauge
	relay       *relay.Server
	sched       *scheduler.Scheduler
	throttle    *throttle.Resolver
	vis         *visibility.Visibility
	operator    *nip86.State // the operator's NIP-86 lists (operator.go)
	confMu      sync.Mutex
	conf        *config.Config // the last reload's configuration, nil before one (reload.go)
	space       *diskspace.Guard
	archive     *archive.Scope // GRASP-05 scope
	roster      *roster.Source // shared by the rules, hosting, sync's hosted-here answer
	// clientIP names a request's client behind server.trusted_proxies, by
	// its network (clientip.Clients.Key), for every per-IP limit (the
	// gate's, git's, and through Meta.Remote purgatory's).
	clientIP func(*http.Request) string
	// refusalLog is the operator log's per-minute account of refused
	// clients (core/refusals), fed by the gate, the relay and git.
	refusalLog *refusals.Log

	// life ends when the server stops; background work that is not a
	// scheduled loop hangs on it so it never outlives the store.
	life      context.Context
	endLife   context.CancelFunc
	bg        sync.WaitGroup // background work hanging on life
	ln        net.Listener
	metricLn  net.Listener
	metricSrv *http.Server
	done      chan struct{}
	runErr    error
}

// OpenStore opens the store server.data_dir and [store] describe; e gives
// its clock, logger and metrics registerer.
func OpenStore(cfg config.Config, e env.Env) (*store.Store, error) {
	e = e.OrDefaults()
	opts := StoreOptions(cfg)
	readOnlyOnFullDisk(cfg, &opts)
	st, err := store.New(opts, e.Named("store"))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return st, nil
}

// StoreOptions are the store options cfg describes (also for `grasp admin
// backup --offline` and `restore`, which open the database as serve does).
func StoreOptions(cfg config.Config) store.Options {
	return store.Options{
		Dir:          cfg.Server.DataDir,
		Backend:      cfg.Store.Backend,
		PostgresURL:  cfg.Store.PostgresURL,
		Limits:       cfg.Relay.Limits,
		MemTableMB:   cfg.Store.MemtableMB,
		BlockCacheMB: cfg.Store.BlockCacheMB,
		// 0 in the config is never; 0 in the options is the default
		ResidentFileMB:  cmp.Or(cfg.Store.ResidentFileMB, -1),
		ParallelLogSync: cfg.Store.ParallelLogSync,

		PostgresPool:         cfg.Store.PostgresPool,
		PostgresInstances:    cfg.Store.PostgresInstances,
		PostgresQueriesPerIP: cfg.Store.PostgresQueriesPerIP,
	}
}

// New builds every part on the store and registry of o; it does not listen
// yet. e gives the clock of every timer and the root logger; metrics go to
// o.Metrics.
func New(o Options, e env.Env) (*Server, error) {
	if o.Store == nil || o.Metrics == nil {
		if o.Store != nil {
			o.Store.Close()
		}
		return nil, errors.New("server: Options.Store and Options.Metrics are required")
	}
	// One spelling of every path for every part (a relative data_dir
	// broke backups: issue 26).
	if err := o.Config.Absolute(); err != nil {
		o.Store.Close()
		return nil, err
	}
	e = e.OrDefaults()
	e.Metrics = o.Metrics.Registerer()
	s := &Server{cfg: o.Config, log: e.Log, clk: e.Clock, env: e, build: o.Build,
		metrics: o.Metrics, store: o.Store, done: make(chan struct{}),
		space: diskspace.New(o.Config.Server.DataDir, uint64(max(o.Config.Server.MinFreeMB, 0))<<20, o.FreeSpace)}
	s.life, s.endLife = context.WithCancel(context.Background())
	if err := s.assemble(o.Extensions); err != nil {
		s.closeStore()
		return nil, err
	}
	s.reportReadOnly(o.FreeSpace)
	return s, nil
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
		// The admin paths need the token (F24); the file is made at the
		// first start.
		token, err := admin.EnsureToken(s.cfg.AdminToken())
		if err != nil {
			ln.Close()
			return fmt.Errorf("metrics.admin_token_file: %w", err)
		}
		mln, err := net.Listen("tcp", s.cfg.Metrics.Listen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen for metrics on %s: %w", s.cfg.Metrics.Listen, err)
		}
		s.metricLn = mln
		s.metricSrv = &http.Server{Handler: s.loopbackHandler(mln.Addr(), token), ReadHeaderTimeout: 10 * time.Second}
		go s.metricSrv.Serve(mln) // ends when the shutdown below closes it
	}
	s.sched.Start(ctx)
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
		s.refusalLog.Flush() // the last minute's refusals
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

// metricsAddr is the address of the metrics listener, "disabled" without one.
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
	return s.store.Close() // idempotent
}

// Events is the main event store (for read-only views such as the plugins'
// grasp.store).
func (s *Server) Events() eventstore.Store { return s.store.Events() }

// ThrottleChanged forgets memoised per-domain fetch limits, after the
// throttle plugins were reloaded.
func (s *Server) ThrottleChanged() { s.throttle.Invalidate() }
