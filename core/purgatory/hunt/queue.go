package hunt

import (
	"context"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// entry is one repository in the queue, owned by Run's goroutine.
type entry struct {
	repo     nip34.RepoRef
	needs    map[string]map[string]struct{} // oid -> ids of held events needing it ("" = recheck)
	sources  []string
	attempts int       // rounds that ended with objects still missing
	next     time.Time // earliest start of the next round
	// renewAt is a Need that arrived during a round: the next round may
	// start then instead of after the backoff.
	renewAt time.Time

	active  bool            // a round's task is running
	tried   map[string]bool // URLs tried in this round
	waiting *waiter         // the task while it waits for a slot
	cancel  context.CancelFunc
	// results is the last fetch result from each source (report.go).
	results map[string]fetchResult
}

// fetchResult is how a fetch from one source went.
type fetchResult struct {
	result string
	at     time.Time
}

type msgNeed struct {
	n  Need
	at time.Time
}

type msgForget struct {
	repo    nip34.RepoRef
	eventID string
	one     bool
}

type msgWake struct{}

func (e *entry) oidList() []string {
	out := make([]string, 0, len(e.needs))
	for o := range e.needs {
		out = append(out, o)
	}
	return sortedStrings(out)
}

func (h *Hunter) applyNeed(m msgNeed) {
	n := m.n
	var oids []string
	for _, o := range n.OIDs {
		o = strings.ToLower(strings.TrimSpace(o))
		if !nip34.IsObjectID(o) {
			h.log.Warn("ignoring invalid object id in hunt request", "repo", n.Repo.URLPath(), "oid", truncate(o, 80))
			continue
		}
		oids = append(oids, o)
	}
	key := repoKey(n.Repo)
	e := h.entries[key]
	if e == nil && len(oids) == 0 {
		return
	}
	delay := h.opts.Config.UserFetchDelay.D()
	if n.FromSync {
		delay = h.opts.Config.SyncFetchDelay.D()
	}
	at := m.at.Add(delay)
	if e == nil {
		e = &entry{repo: n.Repo, needs: map[string]map[string]struct{}{}, next: at}
		h.entries[key] = e
		h.log.Debug("added new hunt entry", "repo", n.Repo.URLPath(), "delay", delay)
	} else {
		// Fresh start: a new event often means new data somewhere.
		e.attempts = 0
		if e.active {
			if e.renewAt.IsZero() || at.Before(e.renewAt) {
				e.renewAt = at
			}
		} else if at.Before(e.next) {
			e.next = at
		}
	}
	for _, o := range oids {
		set := e.needs[o]
		if set == nil {
			set = map[string]struct{}{}
			e.needs[o] = set
		}
		set[n.EventID] = struct{}{}
	}
	for _, s := range n.Sources {
		s = strings.TrimSpace(s)
		if s == "" || contains(e.sources, s) {
			continue
		}
		e.sources = append(e.sources, s)
	}
}

func (h *Hunter) applyForget(m msgForget) {
	key := repoKey(m.repo)
	e := h.entries[key]
	if e == nil {
		return
	}
	if m.one {
		for o, set := range e.needs {
			delete(set, m.eventID)
			if len(set) == 0 {
				delete(e.needs, o)
			}
		}
		if len(e.needs) > 0 {
			return
		}
	}
	h.drop(e, "forgotten")
}

// drop removes e from the queue and stops its round. A task waiting for a
// slot sees its context cancelled; stale keys in domain queues are skipped.
func (h *Hunter) drop(e *entry, why string) {
	delete(h.entries, repoKey(e.repo))
	if e.waiting != nil {
		h.reply(e, grant{})
	}
	if e.cancel != nil {
		e.cancel()
	}
	h.log.Debug("removed from hunt queue", "repo", e.repo.URLPath(), "why", why)
}

// scan starts a round for every ready repository, at most once per
// HuntInterval so a burst of Needs becomes one batch of rounds.
func (h *Hunter) scan(now time.Time) {
	if !h.lastScan.IsZero() && now.Before(h.lastScan.Add(h.opts.Config.HuntInterval.D())) {
		return
	}
	started := false
	for _, e := range h.entries {
		if e.active || now.Before(e.next) {
			continue
		}
		h.startRound(e)
		started = true
	}
	if started {
		h.lastScan = now
	}
}

func (h *Hunter) startRound(e *entry) {
	e.active = true
	e.tried = map[string]bool{}
	e.renewAt = time.Time{}
	ctx, cancel := context.WithCancel(h.ctx)
	e.cancel = cancel
	h.log.Debug("starting hunt round", "repo", e.repo.URLPath(), "attempt", e.attempts+1, "oids", len(e.needs))
	h.busy.Add(1) // the task is running until it parks
	go h.round(ctx, e, e.repo, e.oidList())
}

// endRound applies the backoff after a round that left objects missing.
func (h *Hunter) endRound(e *entry) {
	now := h.clk.Now()
	e.active = false
	e.tried = nil
	if e.cancel != nil {
		e.cancel()
		e.cancel = nil
	}
	e.attempts++
	wait := Backoff(e.attempts, h.opts.Config.FetchBackoffBase.D(), h.opts.Config.FetchBackoffMax.D())
	e.next = now.Add(wait)
	if !e.renewAt.IsZero() && e.renewAt.Before(e.next) {
		e.next = e.renewAt
		if e.next.Before(now) {
			e.next = now
		}
	}
	e.renewAt = time.Time{}
	h.m.rounds.WithLabelValues("backoff").Inc()
	h.log.Debug("hunt incomplete - applying backoff", "repo", e.repo.URLPath(), "attempt_count", e.attempts,
		"missing", len(e.needs), "next_in", e.next.Sub(now))
}

func (h *Hunter) complete(e *entry) {
	h.m.rounds.WithLabelValues("complete").Inc()
	h.log.Info("hunt complete - removed from queue", "repo", e.repo.URLPath())
	h.drop(e, "complete")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
