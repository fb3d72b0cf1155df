package throttle

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
)

// Options configure a Resolver. Zero values take the package defaults.
type Options struct {
	Defaults Limits // [throttle] concurrent, per_minute
	Max      Limits // [throttle] max_concurrent, max_per_minute
	// Tuners run in order, each getting the previous result (the plugin
	// chain; the lead passes the plugins.Host here).
	Tuners []Tuner
	Table  Table // from LoadFiles; applied after the tuners
}

// Configured returns the options of the [throttle] section: its limits and
// hard caps, its tuning files (loaded now), and the tuners (nil ones are
// skipped) in order.
func Configured(c config.Throttle, tuners ...Tuner) (Options, error) {
	table, err := LoadFiles(c.Files)
	if err != nil {
		return Options{}, fmt.Errorf("throttle.files: %w", err)
	}
	o := Options{
		Defaults: Limits{Concurrency: c.Concurrent, PerMinute: c.PerMinute},
		Max:      Limits{Concurrency: c.MaxConcurrent, PerMinute: c.MaxPerMinute},
		Table:    table,
	}
	for _, t := range tuners {
		if t != nil {
			o.Tuners = append(o.Tuners, t)
		}
	}
	return o, nil
}

// Resolver computes and memoises the limits of each domain:
// defaults < tuners (in order) < tuning files, clamped to [1, Max].
// It is safe for concurrent use.
type Resolver struct {
	log hclog.Logger

	mu   sync.Mutex
	opts Options
	gen  uint64
	memo map[string]Limits
}

// NewResolver returns a Resolver for opts, logging to e.Log.
func NewResolver(opts Options, e env.Env) *Resolver {
	e = e.OrDefaults()
	return &Resolver{log: e.Log, opts: withDefaults(opts), memo: map[string]Limits{}}
}

func withDefaults(o Options) Options {
	if o.Defaults.Concurrency <= 0 {
		o.Defaults.Concurrency = DefaultConcurrent
	}
	if o.Defaults.PerMinute <= 0 {
		o.Defaults.PerMinute = DefaultPerMinute
	}
	if o.Max.Concurrency <= 0 {
		o.Max.Concurrency = DefaultMaxConcurrent
	}
	if o.Max.PerMinute <= 0 {
		o.Max.PerMinute = DefaultMaxPerMinute
	}
	return o
}

// Update replaces the options (after a config or plugin reload) and forgets
// every memoised domain.
func (r *Resolver) Update(opts Options) {
	opts = withDefaults(opts)
	r.mu.Lock()
	r.opts = opts
	r.gen++
	r.memo = map[string]Limits{}
	r.mu.Unlock()
}

// Invalidate forgets every memoised domain, so the next lookup asks the
// tuners again (call it after the plugin set was swapped).
func (r *Resolver) Invalidate() {
	r.mu.Lock()
	r.gen++
	r.memo = map[string]Limits{}
	r.mu.Unlock()
}

// Named reports whether a tuning file names domain itself (see Table.Names):
// the hunter labels only such domains' metric series.
func (r *Resolver) Named(domain string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opts.Table.Names(domain)
}

// Limits returns the limits for domain, computing them on first use.
func (r *Resolver) Limits(ctx context.Context, domain string) Limits {
	domain = strings.ToLower(domain)
	r.mu.Lock()
	if l, ok := r.memo[domain]; ok {
		r.mu.Unlock()
		return l
	}
	opts, gen := r.opts, r.gen
	r.mu.Unlock()

	l := Fold(ctx, domain, opts, r.log)

	r.mu.Lock()
	if r.gen == gen { // do not memoise a result computed from replaced options
		r.memo[domain] = l
	}
	r.mu.Unlock()
	return l
}

// Fold is the pure-ish decision behind Resolver.Limits: defaults, then each
// tuner (a failing tuner keeps the value it was given: fail open, so the
// hunter keeps running), then the tuning table, then the hard caps.
func Fold(ctx context.Context, domain string, opts Options, log hclog.Logger) Limits {
	opts = withDefaults(opts)
	cur := opts.Defaults
	for i, t := range opts.Tuners {
		next, err := t.Throttle(ctx, domain, cur)
		if err != nil {
			if log != nil {
				log.Warn("throttle tuner failed; keeping previous limits", "domain", domain, "tuner", i, "error", err)
			}
			continue
		}
		cur = next
	}
	cur = opts.Table.Apply(domain, cur)
	return Clamp(cur, opts.Max)
}

// Clamp bounds l to [1, max] field by field.
func Clamp(l, max Limits) Limits {
	l.Concurrency = clampInt(l.Concurrency, max.Concurrency)
	l.PerMinute = clampInt(l.PerMinute, max.PerMinute)
	return l
}

func clampInt(v, max int) int {
	if v < 1 {
		return 1
	}
	if max > 0 && v > max {
		return max
	}
	return v
}
