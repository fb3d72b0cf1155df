package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja_nodejs/require"
	"github.com/hashicorp/go-hclog"
)

// plugin is one configured hook: a Spec bound to a file and a kind.
type plugin struct {
	idx  int
	kind Kind
	spec Spec
	path string // resolved, inside the plugin dir
	log  hclog.Logger
	errs *errLog
	obs  observer

	onFailure func(plugin string, kind Kind, err error)
}

func (p *plugin) failClosed() bool { return p.spec.OnError == OnErrorReject }

// Set is one configuration generation: compiled plugins and a warmed pool.
// It is safe for concurrent use. Hold no references to it across a reload
// other than through Host.
type Set struct {
	opts      Options
	jail      *jail
	registry  *require.Registry
	plugins   []*plugin
	accept    []*plugin
	selection []*plugin
	throttle  []*plugin
	slots     chan *slot
	shared    *shared
	metrics   *metrics
	// files lists every entry file (for Host.Watch and logs).
	files []string
}

// NewSet compiles every plugin named in opts, warms PoolSize runtimes and
// checks that each file exports the function its section needs. It has no
// metrics and its own grasp.kv/ratelimit state; long-running servers use Host.
func NewSet(opts Options) (*Set, error) {
	opts = opts.withDefaults()
	return buildSet(opts, newShared(opts.Clock, opts.KVMaxEntries), nil)
}

func buildSet(opts Options, sh *shared, m *metrics) (*Set, error) {
	s := &Set{opts: opts, shared: sh, metrics: m}
	kinds := []struct {
		kind  Kind
		specs []Spec
		dst   *[]*plugin
	}{
		{KindAccept, opts.Accept, &s.accept},
		{KindRelaySelection, opts.RelaySelection, &s.selection},
		{KindThrottle, opts.Throttle, &s.throttle},
	}
	total := 0
	for _, k := range kinds {
		total += len(k.specs)
	}
	if total == 0 {
		s.slots = make(chan *slot)
		return s, nil
	}
	j, err := newJail(opts.Dir)
	if err != nil {
		return nil, err
	}
	s.jail = j
	seenFile := map[string]bool{}
	for _, k := range kinds {
		specs, err := validateSpecs(k.kind, k.specs)
		if err != nil {
			return nil, err
		}
		for _, sp := range specs {
			path, err := j.entry(sp.File)
			if err != nil {
				return nil, fmt.Errorf("plugins.%s %q: %w", k.kind, sp.Name, err)
			}
			p := &plugin{
				idx: len(s.plugins), kind: k.kind, spec: sp, path: path,
				log:  opts.Logger.Named("plugin." + sp.Name),
				errs: newErrLog(opts.Clock),
				obs:  m.observer(sp.Name, k.kind),

				onFailure: opts.OnFailure,
			}
			s.plugins = append(s.plugins, p)
			*k.dst = append(*k.dst, p)
			if !seenFile[path] {
				seenFile[path] = true
				s.files = append(s.files, path)
			}
		}
	}
	// One registry per generation: goja_nodejs caches compiled programs per
	// path forever, so reusing it would never pick up edited files.
	s.registry = j.registry()
	s.slots = make(chan *slot, opts.PoolSize)
	for i := 0; i < opts.PoolSize; i++ {
		sl, err := s.newSlot()
		if err != nil {
			return nil, err
		}
		s.slots <- sl
	}
	return s, nil
}

// Files returns the resolved entry files of the set's plugins.
func (s *Set) Files() []string { return append([]string(nil), s.files...) }

// Dir returns the resolved plugin directory ("" when no plugin is configured).
func (s *Set) Dir() string {
	if s.jail == nil {
		return ""
	}
	return s.jail.root
}

func (s *Set) poolSize() int { return cap(s.slots) }

// newSlot builds and warms one runtime: globals, every file required once,
// every hook resolved. After it returns, require() refuses to load anything.
func (s *Set) newSlot() (*slot, error) {
	vm := goja.New()
	vm.SetMaxCallStackSize(s.opts.MaxCallStack)
	sl := &slot{set: s, vm: vm, fns: make([]goja.Callable, len(s.plugins)), cfg: make([]goja.Value, len(s.plugins)), loading: true}
	rm := s.registry.Enable(vm)
	parse, ok := goja.AssertFunction(vm.Get("JSON").ToObject(vm).Get("parse"))
	if !ok {
		return nil, errors.New("plugins: JSON.parse is not callable")
	}
	sl.jsonParse = parse
	if err := sl.installGlobals(rm); err != nil {
		return nil, err
	}
	exports := map[string]*goja.Object{}
	for _, p := range s.plugins {
		ex := exports[p.path]
		if ex == nil {
			var val goja.Value
			_, err := sl.call(context.Background(), p, s.opts.InitTimeout, func() (goja.Value, error) {
				var err error
				val, err = rm.Require(p.path)
				return val, err
			})
			if err != nil {
				return nil, fmt.Errorf("plugins.%s %q: load %s: %w", p.kind, p.spec.Name, p.spec.File, err)
			}
			if val == nil || goja.IsUndefined(val) || goja.IsNull(val) {
				return nil, fmt.Errorf("plugins.%s %q: %s sets no module.exports", p.kind, p.spec.Name, p.spec.File)
			}
			ex = val.ToObject(vm)
			exports[p.path] = ex
		}
		fn, ok := goja.AssertFunction(ex.Get(p.kind.export()))
		if !ok {
			return nil, fmt.Errorf("plugins.%s %q: %s does not export a function %q (module.exports = { %s(...) {...} })",
				p.kind, p.spec.Name, p.spec.File, p.kind.export(), p.kind.export())
		}
		sl.fns[p.idx] = fn
		cfg, err := sl.configValue(p.spec.Config)
		if err != nil {
			return nil, fmt.Errorf("plugins.%s %q: config: %w", p.kind, p.spec.Name, err)
		}
		sl.cfg[p.idx] = cfg
	}
	sl.loading = false
	return sl, nil
}

// configValue turns the TOML table into a plain JS object owned by this
// runtime (a Go map wrapper would be shared, and writable, across runtimes).
func (sl *slot) configValue(cfg map[string]any) (goja.Value, error) {
	if cfg == nil {
		cfg = map[string]any{}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	return sl.jsonParse(goja.Undefined(), sl.vm.ToValue(string(b)))
}

// acquire waits for a free runtime until ctx ends or wait elapses.
func (s *Set) acquire(ctx context.Context, wait time.Duration) (*slot, error) {
	select {
	case sl := <-s.slots:
		return sl, nil
	default:
	}
	t := s.opts.Clock.NewTimer(wait)
	defer t.Stop()
	select {
	case sl := <-s.slots:
		return sl, nil
	case <-ctx.Done():
		return nil, &callError{"busy", fmt.Errorf("no free plugin runtime: %w", ctx.Err())}
	case <-t.C():
		return nil, &callError{"busy", errors.New("no free plugin runtime before the deadline")}
	}
}

// release returns a runtime to the pool, replacing it if a Go panic went
// through it (its internal state is no longer trustworthy).
func (s *Set) release(sl *slot) {
	if sl.broken {
		if fresh, err := s.newSlot(); err == nil {
			sl = fresh
		} else {
			s.opts.Logger.Error("cannot replace a plugin runtime after a panic; reusing it", "error", err)
			sl.broken = false
		}
	}
	s.slots <- sl
}

// fail records a failed call: metrics and a rate-limited log line.
func (p *plugin) fail(err error) {
	kind := "exception"
	var ce *callError
	if errors.As(err, &ce) {
		kind = ce.kind
	}
	p.obs.failed(kind)
	if p.onFailure != nil {
		p.onFailure(p.spec.Name, p.kind, err)
	}
	p.errs.log(p.log, "plugin call failed", "hook", p.kind.export(), "kind", kind, "on_error", p.spec.OnError, "error", strings.TrimSpace(err.Error()))
}
