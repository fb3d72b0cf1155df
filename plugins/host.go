package plugins

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/throttle"
)

// Host owns the running plugin Set and swaps it on Reload. It implements
// policy.Acceptor, relaysync.RelaySelector and throttle.Tuner by
// delegating to whichever Set is current, so core is wired once. The
// grasp.kv and grasp.ratelimit state and the metrics outlive reloads.
type Host struct {
	cur     atomic.Pointer[Set]
	mu      sync.Mutex // serialises Reload
	base    Options    // Clock, Logger, Registerer, PoolSize fixed at New
	log     hclog.Logger
	shared  *shared
	metrics *metrics
	restart atomic.Bool
	hooks   []func() // run after each successful swap (under mu)
}

// Compile-time checks: Host and Set are what core consumes.
var (
	_ policy.Acceptor         = (*Host)(nil)
	_ relaysync.RelaySelector = (*Host)(nil)
	_ throttle.Tuner          = (*Host)(nil)
	_ policy.Acceptor         = (*Set)(nil)
	_ relaysync.RelaySelector = (*Set)(nil)
	_ throttle.Tuner          = (*Set)(nil)
)

// OnReload registers f to run after every successful swap, e.g. a
// throttle.Resolver's Invalidate so memoised limits are recomputed.
func (h *Host) OnReload(f func()) {
	h.mu.Lock()
	h.hooks = append(h.hooks, f)
	h.mu.Unlock()
}

// New builds and warms the first Set. Clock, Logger, Registerer and PoolSize
// are fixed for the Host's life.
func New(opts Options) (*Host, error) {
	opts = opts.withDefaults()
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("plugins: register metrics: %w", err)
	}
	h := &Host{base: opts, log: opts.Logger, shared: newShared(opts.Clock, opts.KVMaxEntries), metrics: m}
	set, err := buildSet(opts, h.shared, m)
	if err != nil {
		return nil, fmt.Errorf("plugins: %w", err)
	}
	h.cur.Store(set)
	h.log.Info("plugins loaded", "accept", len(set.accept), "relay_selection", len(set.selection), "throttle", len(set.throttle), "pool_size", set.poolSize())
	return h, nil
}

// Current returns the running Set.
func (h *Host) Current() *Set { return h.cur.Load() }

// Reload builds a complete new Set from opts (decode, compile, warm the
// whole pool, check exports) and swaps it in atomically. On any error the
// running Set stays and the error says why. A changed PoolSize is not
// applied (it is startup-only): the new Set keeps the old size and
// RestartPending reports true.
func (h *Host) Reload(opts Options) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	opts.Clock, opts.Logger, opts.Registerer = h.base.Clock, h.base.Logger, nil
	if opts.PoolSize > 0 && opts.PoolSize != h.base.PoolSize {
		h.log.Warn("plugins.pool_size changed; it takes effect after a restart", "running", h.base.PoolSize, "configured", opts.PoolSize)
		h.restart.Store(true)
	}
	opts.PoolSize = h.base.PoolSize
	opts = opts.withDefaults()
	set, err := buildSet(opts, h.shared, h.metrics)
	h.metrics.reloaded(err == nil)
	if err != nil {
		// The caller logs it (once): it also knows what triggered the reload.
		return fmt.Errorf("plugins: reload: %w", err)
	}
	h.cur.Store(set)
	for _, f := range h.hooks {
		f()
	}
	h.log.Info("plugins reloaded", "accept", len(set.accept), "relay_selection", len(set.selection), "throttle", len(set.throttle))
	return nil
}

// RestartPending reports whether a reload asked for a startup-only change
// (pool_size) that needs a restart.
func (h *Host) RestartPending() bool { return h.restart.Load() }

// Accept implements policy.Acceptor with the current Set.
func (h *Host) Accept(ctx context.Context, evt *nostr.Event, meta policy.Meta) policy.Verdict {
	return h.cur.Load().Accept(ctx, evt, meta)
}

// SelectRelays implements relaysync.RelaySelector with the current Set.
func (h *Host) SelectRelays(ctx context.Context, repo relaysync.RepoInfo, cands []relaysync.Candidate) ([]string, error) {
	return h.cur.Load().SelectRelays(ctx, repo, cands)
}

// Throttle implements throttle.Tuner with the current Set.
func (h *Host) Throttle(ctx context.Context, domain string, cur throttle.Limits) (throttle.Limits, error) {
	return h.cur.Load().Throttle(ctx, domain, cur)
}

// Watch polls the content hashes of paths (files, or directories walked
// recursively) every Options.WatchInterval on the injected clock and calls
// onChange once per detected change, until ctx ends. It is the `watch = true`
// trigger; onChange normally re-reads grasp.toml and calls Reload. An
// unreadable path hashes as missing, so its reappearance is a change too.
func (h *Host) Watch(ctx context.Context, paths []string, onChange func()) {
	last := hashPaths(paths)
	t := h.base.Clock.NewTicker(h.base.WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			if cur := hashPaths(paths); cur != last {
				last = cur
				onChange()
			}
		}
	}
}

// hashPaths digests names and contents of every regular file under paths.
func hashPaths(paths []string) [32]byte {
	hw := sha256.New()
	var files []string
	for _, p := range paths {
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(hw, "missing %s\n", path)
				return nil
			}
			if !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(hw, "file %s\n", f)
		if fh, err := os.Open(f); err == nil {
			_, _ = io.Copy(hw, fh)
			fh.Close()
		}
	}
	var out [32]byte
	copy(out[:], hw.Sum(nil))
	return out
}
