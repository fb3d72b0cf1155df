package conn

import (
	"fmt"
	"sync"
	"time"
)

// maxDailyRelays bounds the relays counted in one day. Only relays with a
// daily bound are counted (outbox relays, at most sync.max_outbox_relays at
// once), so it is reached only by churn; then the relays still under their
// bound are forgotten, never the ones that reached it.
const maxDailyRelays = 4096

// dailyCounts is how many events each bounded relay delivered to the
// pipeline in the current UTC day. It lives in the pool, not the
// connection or the peer (which Close forgets), so neither a reconnect nor
// the relay dropping out of the targets and back resets it.
type dailyCounts struct {
	mu  sync.Mutex
	day string // UTC date the counts are for
	n   map[string]int
}

func (d *dailyCounts) roll(now time.Time) {
	if day := now.UTC().Format(time.DateOnly); day != d.day {
		d.day = day
		clear(d.n)
	}
}

// take counts one event from url and reports whether it is within bound.
func (d *dailyCounts) take(url string, bound int, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.roll(now)
	if _, known := d.n[url]; !known && len(d.n) >= maxDailyRelays {
		for u, c := range d.n {
			if c < bound {
				delete(d.n, u)
			}
		}
	}
	if d.n[url] >= bound {
		return false
	}
	d.n[url]++
	return true
}

// spent reports whether url has used up bound today.
func (d *dailyCounts) spent(url string, bound int, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.roll(now)
	return d.n[url] >= bound
}

// errOverDailyBound ends or refuses a connection to a relay that reached
// its daily event bound; the manager's health backoff then spaces out the
// attempts, and none dials before the next UTC day.
func errOverDailyBound(url string, bound int, now time.Time) error {
	next := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	return fmt.Errorf("%s delivered its daily bound of %d events (sync.outbox_events_per_relay_per_day); not dialled again before %s",
		url, bound, next.Format(time.RFC3339))
}
