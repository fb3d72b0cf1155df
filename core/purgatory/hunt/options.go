package hunt

import (
	"context"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/throttle"
)

// Options configure a Hunter. The zero value works: every zero timer takes
// config's default, except the fetch delays, where zero means at the next
// scan.
type Options struct {
	// Sync fetches and checks objects and reports arrivals (GitContext);
	// required.
	Sync SyncContext
	// Config is the [purgatory] section as loaded. The hunter reads its
	// timers: user_fetch_delay (wait for a client-submitted event, a push
	// is expected), sync_fetch_delay (so a burst of synced events for one
	// repository becomes one fetch), hunt_interval (shortest time between
	// two scans; the hunter sleeps when nothing is due),
	// fetch_backoff_base/max (retry delay after a round left OIDs
	// missing: base, doubling, capped) and naughty_ttl (how long a host
	// that failed at DNS, TLS or connection level is skipped).
	Config config.Purgatory
	// SelfHosts are this server's host[:port]s (or its public URLs, every
	// one of them: a .onion alias is this server too); sources on them are
	// never fetched from. A host without a port matches the default ports
	// 80 and 443.
	SelfHosts []string
	// Limits returns the throttle limits of a domain (defaults < throttle
	// plugins < tuning files: pass throttle.Resolver.Limits). Nil means
	// DefaultLimits for every domain. It is called from the owner goroutine
	// whenever capacity is checked, so it must be cheap (memoised).
	Limits func(ctx context.Context, domain string) throttle.Limits
	// Labelled reports whether a domain is the operator's to name in
	// metric labels (pass throttle.Resolver.Named: domains with a tuning
	// file entry of their own). Every other domain's fetches are summed
	// under domain="other": domains come from clone URLs that strangers
	// choose (audit F14). Nil labels none. Called from the owner goroutine
	// when a domain's throttle state is created.
	Labelled func(domain string) bool
	// Disabled, if set, is why the hunter must not fetch (CheckGit): it
	// then queues nothing, logs the reason when it runs, and reports
	// grasp_hunt_enabled 0. Held events still leave purgatory by push.
	Disabled error
}

// DefaultLimits are the seed's per-domain limits: 5 concurrent, 30 a minute.
var DefaultLimits = throttle.Limits{Concurrency: 5, PerMinute: 30}

// rateWindow is the sliding window of Limits.PerMinute.
const rateWindow = time.Minute

// DefaultOptions returns config's timers.
func DefaultOptions() Options {
	return Options{Config: config.Default().Purgatory}
}

func (o Options) withDefaults() Options {
	d := config.Default().Purgatory
	c := &o.Config
	if c.UserFetchDelay < 0 {
		c.UserFetchDelay = 0
	}
	if c.SyncFetchDelay < 0 {
		c.SyncFetchDelay = 0
	}
	for _, f := range []struct{ v, d *config.Duration }{
		{&c.HuntInterval, &d.HuntInterval}, {&c.FetchBackoffBase, &d.FetchBackoffBase},
		{&c.FetchBackoffMax, &d.FetchBackoffMax}, {&c.NaughtyTTL, &d.NaughtyTTL},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if c.FetchBackoffMax < c.FetchBackoffBase {
		c.FetchBackoffMax = c.FetchBackoffBase
	}
	if o.Limits == nil {
		o.Limits = func(context.Context, string) throttle.Limits { return DefaultLimits }
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
