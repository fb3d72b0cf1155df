package hunt

import (
	"context"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// RepoHunt is what the hunter is doing for one repository, for the
// repository's page (core/pages): read from the owner goroutine's state,
// never changing it.
type RepoHunt struct {
	Missing  int       // objects still missing
	Hunting  bool      // a round is running
	Waiting  bool      // the round waits for a throttle slot
	Attempts int       // rounds that ended with objects still missing
	Next     time.Time // when the next round may start (zero while one runs)
	Sources  []SourceResult
}

// SourceResult is one git source of a repository and how its last fetch
// in this queue entry went.
type SourceResult struct {
	URL     string
	Result  string    // "ok", "partial", a failure kind ("network", "missing", ...), "" when not fetched yet
	At      time.Time // of Result
	Skipped bool      // its host is on the naughty list now
	Self    bool      // this server: never fetched from
}

// maxReportSources bounds the sources a report lists.
const maxReportSources = 32

type msgReport struct {
	repo  nip34.RepoRef
	reply chan RepoHunt // buffered 1; closed without a value when repo is not queued
}

// Runs reports whether the hunter runs here: on, and its loop running
// (on the leader instance).
func (h *Hunter) Runs() bool { return h.opts.Disabled == nil && h.running.Load() }

// Repo reports what the hunter is doing for repo; false when repo is not
// in its queue, or the hunter does not run here (off, or another instance
// leads). It waits for the owner goroutine at most as long as ctx.
func (h *Hunter) Repo(ctx context.Context, repo nip34.RepoRef) (RepoHunt, bool) {
	if !h.Runs() {
		return RepoHunt{}, false
	}
	m := msgReport{repo: repo, reply: make(chan RepoHunt, 1)}
	h.post(m)
	select {
	case r, ok := <-m.reply:
		return r, ok
	case <-ctx.Done():
		return RepoHunt{}, false
	}
}

func (h *Hunter) applyReport(m msgReport) {
	e := h.entries[repoKey(m.repo)]
	if e == nil {
		close(m.reply)
		return
	}
	now := h.clk.Now()
	r := RepoHunt{Missing: len(e.needs), Hunting: e.active, Waiting: e.waiting != nil, Attempts: e.attempts}
	if !e.active {
		r.Next = e.next
	}
	for _, u := range e.sources {
		if len(r.Sources) == maxReportSources {
			break
		}
		s := SourceResult{URL: u}
		if last, ok := e.results[u]; ok {
			s.Result, s.At = last.result, last.at
		}
		if t, err := parseSource(u); err == nil {
			s.Self = h.self.matches(t)
			s.Skipped = h.isNaughty(t.host, now)
		}
		r.Sources = append(r.Sources, s)
	}
	m.reply <- r
}
