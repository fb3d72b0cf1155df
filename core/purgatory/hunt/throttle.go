package hunt

import (
	"time"

	"github.com/grasp-dev/grasp/core/throttle"
)

// domainState is one domain's throttle: fetches in flight, the start times
// of the sliding rate window, and the repositories waiting for a slot in
// arrival order. Serving the head and re-queueing at the tail is the round
// robin that keeps one repository from taking every slot.
type domainState struct {
	label    string // its metric label: the domain, or otherDomains
	inFlight int
	starts   []time.Time // ascending; only those inside the window are kept
	waiting  []string    // repo keys
	queued   map[string]bool
}

func newDomainState(label string) *domainState {
	return &domainState{label: label, queued: map[string]bool{}}
}

// prune forgets starts that left the sliding window.
func (d *domainState) prune(now time.Time) {
	i := 0
	for i < len(d.starts) && !now.Before(d.starts[i].Add(rateWindow)) {
		i++
	}
	if i > 0 {
		d.starts = append(d.starts[:0], d.starts[i:]...)
	}
}

// hasCapacity reports whether a fetch may start now under lim.
func (d *domainState) hasCapacity(now time.Time, lim throttle.Limits) bool {
	d.prune(now)
	return d.inFlight < lim.Concurrency && len(d.starts) < lim.PerMinute
}

func (d *domainState) take(now time.Time) {
	d.inFlight++
	d.starts = append(d.starts, now)
}

// opening is when the rate window lets the next fetch start, if the rate
// (not concurrency) is what holds the waiting repositories back. A freed
// concurrency slot needs no timer: the fetch result triggers the pump.
func (d *domainState) opening(now time.Time, lim throttle.Limits) (time.Time, bool) {
	if len(d.waiting) == 0 || d.inFlight >= lim.Concurrency {
		return time.Time{}, false
	}
	d.prune(now)
	if len(d.starts) < lim.PerMinute {
		return now, true
	}
	return d.starts[len(d.starts)-lim.PerMinute].Add(rateWindow), true
}

func (d *domainState) enqueue(key string) bool {
	if d.queued[key] {
		return false
	}
	d.queued[key] = true
	d.waiting = append(d.waiting, key)
	return true
}

func (d *domainState) pop() (string, bool) {
	if len(d.waiting) == 0 {
		return "", false
	}
	k := d.waiting[0]
	d.waiting[0] = ""
	d.waiting = d.waiting[1:]
	delete(d.queued, k)
	return k, true
}

func (d *domainState) idle(now time.Time) bool {
	d.prune(now)
	return d.inFlight == 0 && len(d.waiting) == 0 && len(d.starts) == 0
}

// clampLimits keeps a broken Limits func from stalling a domain forever.
func clampLimits(l throttle.Limits) throttle.Limits {
	if l.Concurrency < 1 {
		l.Concurrency = 1
	}
	if l.PerMinute < 1 {
		l.PerMinute = 1
	}
	return l
}
