// Package plugins hosts the operator's JavaScript plugins (goja, CommonJS)
// and adapts their exports to core's interfaces: policy.Acceptor (accept),
// relaysync.RelaySelector (selectRelays) and throttle.Tuner (throttle).
//
// One configuration generation is a Set: every plugin file compiled once,
// a fixed pool of runtimes each holding its own resolved functions, and the
// chains in config order. A Host holds the current Set behind an atomic
// pointer and swaps in a fully warmed new one on Reload, keeping the old one
// on any error. Scripts see only the event copy, a ctx object and the small
// `grasp` global; they get no filesystem, network, process or timers, and
// require() is confined to the plugin directory and to load time. Plugins
// are trusted like grasp.toml: goja has no memory cap.
package plugins

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
)

// Kind names a hook section of the config ([[plugins.<kind>]]).
type Kind string

const (
	KindAccept         Kind = "accept"
	KindRelaySelection Kind = "relay_selection"
	KindThrottle       Kind = "throttle"
)

// export is the module.exports function a kind needs.
func (k Kind) export() string {
	switch k {
	case KindAccept:
		return "accept"
	case KindRelaySelection:
		return "selectRelays"
	case KindThrottle:
		return "throttle"
	}
	return ""
}

// Default per-call deadlines (reference/plugins.md §4: accept is on the ingest
// path; selection and throttle run per sync cycle or per domain).
const (
	DefaultAcceptTimeout    = 50 * time.Millisecond
	DefaultSelectionTimeout = 500 * time.Millisecond
	DefaultThrottleTimeout  = 200 * time.Millisecond
	// DefaultInitTimeout bounds a plugin file's top-level code at load time.
	DefaultInitTimeout  = 2 * time.Second
	DefaultMaxCallStack = 1000
	// DefaultQueueTimeout bounds the wait for a free runtime when every one
	// is busy; past it the chain's on_error applies (backpressure).
	DefaultQueueTimeout = time.Second
)

// OnError values: what a failing plugin (exception, timeout, bad return,
// no free runtime) means for its chain.
const (
	// OnErrorReject fails closed: accept rejects the event with "error: ...";
	// selection and throttle return the error to their caller.
	OnErrorReject = "reject"
	// OnErrorSkip fails open: the plugin is treated as having no opinion.
	OnErrorSkip = "skip"
)

func (k Kind) defaults() (time.Duration, string) {
	switch k {
	case KindAccept:
		return DefaultAcceptTimeout, OnErrorReject // an acceptance gate fails closed
	case KindRelaySelection:
		return DefaultSelectionTimeout, OnErrorSkip
	default:
		return DefaultThrottleTimeout, OnErrorSkip
	}
}

// Spec is one [[plugins.<kind>]] table.
type Spec struct {
	Name    string         // unique within its kind; logger "plugin.<name>", metrics label, kv namespace
	File    string         // path relative to Options.Dir
	Timeout time.Duration  // 0 = the kind's default
	OnError string         // "reject" | "skip" | "" (kind default)
	Config  map[string]any // free-form; the script sees it as ctx.config
}

// Store is the read-only view of the event store that grasp.store offers
// scripts. Count must honour ctx: goja cannot interrupt native calls, so the
// plugin deadline reaches the store only through ctx.
type Store interface {
	Count(ctx context.Context, f nostr.Filter) (int64, error)
}

// Options configure a Set (and a Host). Zero values are usable.
type Options struct {
	Dir      string // [plugins] dir; scripts are resolved and confined here
	PoolSize int    // runtimes; 0 = GOMAXPROCS (startup-only: a Host keeps its first size)
	Domain   string // grasp.domain

	Accept         []Spec
	RelaySelection []Spec
	Throttle       []Spec

	Store      Store // nil: grasp.store.* throws
	Clock      clock.Clock
	Logger     hclog.Logger
	Registerer prometheus.Registerer // nil: no metrics registered

	// Optional knobs; zero takes the default.
	InitTimeout   time.Duration // bound on each file's top-level code
	QueueTimeout  time.Duration // longest wait for a free runtime (default 1s)
	MaxCallStack  int           // goja call-stack depth limit
	WatchInterval time.Duration // Host.Watch poll period (default 2s)
	KVMaxEntries  int           // grasp.kv / grasp.ratelimit key caps (default 100000)

	// OnFailure, when set, sees every failed call with its whole error
	// (the log line is rate-limited): `grasp plugin test` prints them.
	OnFailure func(plugin string, kind Kind, err error)
}

func (o Options) withDefaults() Options {
	if o.PoolSize <= 0 {
		o.PoolSize = runtime.GOMAXPROCS(0)
	}
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.InitTimeout <= 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = DefaultQueueTimeout
	}
	if o.MaxCallStack <= 0 {
		o.MaxCallStack = DefaultMaxCallStack
	}
	if o.WatchInterval <= 0 {
		o.WatchInterval = 2 * time.Second
	}
	if o.KVMaxEntries <= 0 {
		o.KVMaxEntries = 100000
	}
	return o
}

// validate checks the specs of one kind and fills in their defaults.
func validateSpecs(kind Kind, specs []Spec) ([]Spec, error) {
	out := make([]Spec, len(specs))
	seen := map[string]bool{}
	defTimeout, defOnError := kind.defaults()
	for i, s := range specs {
		where := fmt.Sprintf("plugins.%s[%d]", kind, i)
		if s.Name == "" {
			return nil, fmt.Errorf("%s: name is required", where)
		}
		where = fmt.Sprintf("plugins.%s %q", kind, s.Name)
		if seen[s.Name] {
			return nil, fmt.Errorf("%s: duplicate name", where)
		}
		seen[s.Name] = true
		if s.File == "" {
			return nil, fmt.Errorf("%s: file is required", where)
		}
		if s.Timeout < 0 {
			return nil, fmt.Errorf("%s: timeout must not be negative", where)
		}
		if s.Timeout == 0 {
			s.Timeout = defTimeout
		}
		switch s.OnError {
		case "":
			s.OnError = defOnError
		case OnErrorReject, OnErrorSkip:
		default:
			return nil, fmt.Errorf("%s: on_error must be %q or %q, not %q", where, OnErrorReject, OnErrorSkip, s.OnError)
		}
		out[i] = s
	}
	return out, nil
}
