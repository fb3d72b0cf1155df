package hunt

import (
	"context"
	"time"

	"github.com/grasp-dev/grasp/core/purgatory"
)

// Options configure a Hunter. The zero value works: delays of zero hunt at
// the next scan, every other zero field takes the seed default below.
type Options struct {
	// Sync fetches and checks objects and reports arrivals (GitContext);
	// required.
	Sync SyncContext
	// UserDelay is the wait before hunting for a client-submitted event:
	// a git push is expected to follow (seed: 3 min).
	UserDelay time.Duration
	// SyncDelay is the wait before hunting for a synced event, so a burst
	// of events for one repository becomes one fetch (seed: 500 ms).
	SyncDelay time.Duration
	// HuntInterval is the shortest time between two scans for ready
	// repositories (seed: 1 s). The hunter sleeps when nothing is due.
	HuntInterval time.Duration
	// BackoffBase and BackoffMax shape the retry delay after a round that
	// left OIDs missing: base, doubling, capped (seed: 20 s, 2 min).
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// NaughtyTTL is how long a host that failed at DNS, TLS or connection
	// level is skipped (seed: 12 h).
	NaughtyTTL time.Duration
	// SelfHost is this server's host[:port] (or its public URL); sources on
	// it are never fetched from. A host without a port matches the default
	// ports 80 and 443.
	SelfHost string
	// Limits returns the throttle limits of a domain (defaults < throttle
	// plugins < tuning files: pass throttle.Resolver.Limits). Nil means
	// DefaultLimits for every domain. It is called from the owner goroutine
	// whenever capacity is checked, so it must be cheap (memoised).
	Limits func(ctx context.Context, domain string) purgatory.Limits
	// Disabled, if set, is why the hunter must not fetch (CheckGit): it
	// then queues nothing, logs the reason when it runs, and reports
	// grasp_hunt_enabled 0. Held events still leave purgatory by push.
	Disabled error
}

// DefaultLimits are the seed's per-domain limits: 5 concurrent, 30 a minute.
var DefaultLimits = purgatory.Limits{Concurrency: 5, PerMinute: 30}

// rateWindow is the sliding window of Limits.PerMinute.
const rateWindow = time.Minute

// DefaultOptions returns the seed's timers.
func DefaultOptions() Options {
	return Options{
		UserDelay:    3 * time.Minute,
		SyncDelay:    500 * time.Millisecond,
		HuntInterval: time.Second,
		BackoffBase:  20 * time.Second,
		BackoffMax:   2 * time.Minute,
		NaughtyTTL:   12 * time.Hour,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.UserDelay < 0 {
		o.UserDelay = 0
	}
	if o.SyncDelay < 0 {
		o.SyncDelay = 0
	}
	if o.HuntInterval <= 0 {
		o.HuntInterval = d.HuntInterval
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = d.BackoffBase
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = d.BackoffMax
	}
	if o.BackoffMax < o.BackoffBase {
		o.BackoffMax = o.BackoffBase
	}
	if o.NaughtyTTL <= 0 {
		o.NaughtyTTL = d.NaughtyTTL
	}
	if o.Limits == nil {
		o.Limits = func(context.Context, string) purgatory.Limits { return DefaultLimits }
	}
	return o
}

// Backoff is the delay before the next round after attempt failed rounds
// (attempt >= 1): base * 2^(attempt-1), capped at max.
func Backoff(attempt int, base, max time.Duration) time.Duration {
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}
