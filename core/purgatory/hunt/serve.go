package hunt

import (
	"sort"
	"time"

	"github.com/grasp-dev/grasp/core/throttle"
)

// grant is the owner's answer to a task asking for its next fetch: a URL
// with a throttle slot already taken on its domain, or ok=false when the
// round is over.
type grant struct {
	ok     bool
	url    string
	domain string
	host   string
	oids   []string
}

type msgPresent struct {
	e       *entry
	present []string
}

type msgAcquire struct {
	e *entry
	w *waiter
}

type msgResult struct {
	e       *entry
	g       grant
	fetched []string
	err     error
}

func (h *Hunter) current(e *entry) bool { return h.entries[repoKey(e.repo)] == e && e.active }

func (h *Hunter) limits(domain string) throttle.Limits {
	return clampLimits(h.opts.Limits(h.ctx, domain))
}

func (h *Hunter) domain(name string) *domainState {
	d := h.domains[name]
	if d == nil {
		label := otherDomains
		if h.opts.Labelled != nil && h.opts.Labelled(name) {
			label = name
		}
		d = newDomainState(label)
		h.domains[name] = d
	}
	return d
}

func (h *Hunter) isNaughty(host string, now time.Time) bool {
	until, ok := h.naughty[host]
	return ok && now.Before(until)
}

func (h *Hunter) applyPresent(m msgPresent) {
	if !h.current(m.e) {
		return
	}
	for _, o := range m.present {
		delete(m.e.needs, o)
	}
	if len(m.present) > 0 {
		h.log.Debug("objects already present", "repo", m.e.repo.URLPath(), "oids", len(m.present))
	}
}

// reply hands g to e's waiting task. The task counts as busy again from
// here, before it is even scheduled.
func (h *Hunter) reply(e *entry, g grant) {
	w := e.waiting
	e.waiting = nil
	h.answer(w, g)
}

// answer delivers g unless the task gave up; a slot granted to a task that
// gave up goes back to its domain (tick pumps it).
func (h *Hunter) answer(w *waiter, g grant) {
	if w.state.CompareAndSwap(waiting, answered) {
		h.busy.Add(1)
		w.ch <- g
		return
	}
	if d := h.domains[g.domain]; g.ok && d != nil && d.inFlight > 0 {
		d.inFlight--
		h.m.inFlight.WithLabelValues(d.label).Dec()
	}
}

func (h *Hunter) applyAcquire(m msgAcquire) {
	e := m.e
	if !h.current(e) {
		h.answer(m.w, grant{})
		return
	}
	e.waiting = m.w
	if len(e.needs) == 0 {
		h.reply(e, grant{})
		h.complete(e)
		return
	}
	h.offer(e, "")
}

// offer starts e's next fetch if a domain has room (preferring domain
// prefer), queues e on every domain that holds it back otherwise, and ends
// the round when no URL is left to try.
func (h *Hunter) offer(e *entry, prefer string) {
	g, throttled := h.pick(e, prefer)
	if !g.ok && prefer != "" {
		g, throttled = h.pick(e, "")
	}
	if g.ok {
		h.reply(e, g)
		return
	}
	if len(throttled) > 0 {
		key := repoKey(e.repo)
		for _, name := range throttled {
			if d := h.domain(name); d.enqueue(key) {
				h.m.throttled.WithLabelValues(d.label).Inc()
			}
		}
		return
	}
	h.reply(e, grant{})
	h.endRound(e)
}

// pick chooses e's next URL: untried, not ours, host not naughty, and on a
// domain with capacity (only domain only, if set). It takes the slot. With
// no such URL it returns the domains of the untried URLs that are waiting
// only for capacity.
func (h *Hunter) pick(e *entry, only string) (grant, []string) {
	now := h.clk.Now()
	var throttled []string
	for _, u := range e.sources {
		if e.tried[u] {
			continue
		}
		t, err := parseSource(u)
		if err != nil || h.self.matches(t) {
			if err != nil {
				h.log.Debug("skipping unusable git source", "repo", e.repo.URLPath(), "url", truncate(u, 200), "error", err)
			}
			e.tried[u] = true
			continue
		}
		if h.isNaughty(t.host, now) || (only != "" && t.domain != only) {
			continue
		}
		d := h.domain(t.domain)
		if !d.hasCapacity(now, h.limits(t.domain)) {
			if !contains(throttled, t.domain) {
				throttled = append(throttled, t.domain)
			}
			continue
		}
		e.tried[u] = true
		d.take(now)
		h.fetches++
		h.m.requests.WithLabelValues(d.label).Inc()
		h.m.inFlight.WithLabelValues(d.label).Inc()
		return grant{ok: true, url: u, domain: t.domain, host: t.host, oids: e.oidList()}, nil
	}
	return grant{}, throttled
}

// pump hands domain's free slots to its waiting repositories in turn.
func (h *Hunter) pump(name string) {
	d := h.domains[name]
	if d == nil {
		return
	}
	now := h.clk.Now()
	for len(d.waiting) > 0 && d.hasCapacity(now, h.limits(name)) {
		key, _ := d.pop()
		e := h.entries[key]
		if e == nil || e.waiting == nil {
			continue
		}
		h.offer(e, name)
	}
}

func (h *Hunter) applyResult(m msgResult) {
	if d := h.domains[m.g.domain]; d != nil && d.inFlight > 0 {
		d.inFlight--
		h.m.inFlight.WithLabelValues(d.label).Dec()
	}
	kind := KindOf(m.err)
	result := "ok"
	switch {
	case m.err != nil && len(m.fetched) > 0:
		result = "partial"
	case m.err != nil:
		result = kind.String()
	}
	h.m.attempts.WithLabelValues(result).Inc()
	if m.err != nil && kind == KindNetwork {
		if !h.isNaughty(m.g.host, h.clk.Now()) {
			h.log.Warn("git host unreachable; skipping it", "host", m.g.host, "for", h.opts.Config.NaughtyTTL.D(), "error", m.err)
		}
		h.naughty[m.g.host] = h.clk.Now().Add(h.opts.Config.NaughtyTTL.D())
	}
	if h.current(m.e) {
		e := m.e
		if e.results == nil {
			e.results = map[string]fetchResult{}
		}
		e.results[m.g.url] = fetchResult{result: result, at: h.clk.Now()}
		got := 0
		for _, o := range m.fetched {
			if _, ok := e.needs[o]; ok {
				delete(e.needs, o)
				got++
			}
		}
		h.fetched += uint64(got)
		h.m.oids.Add(float64(got))
		if m.err != nil {
			h.log.Warn("failed to fetch OIDs", "repo", e.repo.URLPath(), "url", m.g.url, "kind", kind,
				"fetched", got, "missing", len(e.needs), "error", m.err)
			if kind == KindLocal {
				// Every other URL would fail the same way this round.
				for _, u := range e.sources {
					e.tried[u] = true
				}
			}
		} else {
			h.log.Info("fetched git data", "repo", e.repo.URLPath(), "url", m.g.url, "fetched", got, "missing", len(e.needs))
		}
	}
	h.pump(m.g.domain)
}

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}
