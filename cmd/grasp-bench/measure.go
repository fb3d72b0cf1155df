package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// measureQueries asks the query sets over the first n events and adds each
// kind's REQ → EOSE p50 and p99, and the server's CPU per REQ.
func measureQueries(ctx context.Context, p *proc, c *corpus, n, per int, seed uint64, run *serverRun) error {
	before, err := threadCPU(p.pid())
	if err != nil {
		return err
	}
	qs, err := runQueries(ctx, p.wsURL(), querySets(c, n, per, seed))
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	after, err := threadCPU(p.pid())
	if err != nil {
		return err
	}
	reqs := 0
	for _, q := range qs {
		run.add("query_"+q.Name+"_p50", "query "+q.Name+" p50", "ms", ms(q.P50))
		run.add("query_"+q.Name+"_p99", "query "+q.Name+" p99", "ms", ms(q.P99))
		reqs += q.Queries
	}
	run.add("query_cpu", "  server CPU per REQ (all kinds)", "µs", float64((after-before).Microseconds())/float64(max(1, reqs)))
	run.Detail["queries"] = qs
	return nil
}

// measureNegentropy reconciles the first n events runs times with 1 % of
// them missing on the client and runs times in sync, and adds the median
// wall time of each and the server's mean CPU time per reconciliation.
// Then the same for one repository's events (NEG-OPEN by `#a`, the
// repository whose events number closest to repoSessionTarget, 10 %
// missing and in sync): a session that should cost the same at every
// store size.
func measureNegentropy(ctx context.Context, url string, pid int, c *corpus, n, runs int, run *serverRun) error {
	runs = max(1, runs)
	type kind struct {
		key, what string
		filter    nostr.Filter
		pos       []int
		missEvery int
		rs        []negResult
		cpu       time.Duration
		clientCPU time.Duration
	}
	all := firstN(n)
	kinds := []*kind{
		{key: "neg_99", what: "99 % held", pos: all, missEvery: 100},
		{key: "neg_insync", what: "all held", pos: all},
	}
	repo, ok := pickRepo(c, n)
	if ok {
		f := nostr.Filter{Tags: nostr.TagMap{"a": {repo.addr}}}
		kinds = append(kinds,
			&kind{key: "neg_repo_90", what: "90 % held", filter: f, pos: repo.pos, missEvery: 10},
			&kind{key: "neg_repo_insync", what: "all held", filter: f, pos: repo.pos})
	}
	if negOnly != "" {
		kinds = slices.DeleteFunc(kinds, func(k *kind) bool { return k.key != negOnly })
		if len(kinds) == 0 {
			return fmt.Errorf("no reconciliation named %q", negOnly)
		}
	}
	for range runs {
		for _, k := range kinds {
			before, err := threadCPU(pid)
			if err != nil {
				return err
			}
			self := cpuTime()
			r, err := runNegentropyOf(ctx, url, c, k.filter, k.pos, k.missEvery)
			k.clientCPU += cpuTime() - self
			if err != nil {
				return fmt.Errorf("negentropy %s (%s, missing 1 in %d): %w", k.key, k.filter, k.missEvery, err)
			}
			after, err := threadCPU(pid)
			if err != nil {
				return err
			}
			k.rs, k.cpu = append(k.rs, r), k.cpu+after-before
		}
	}
	for _, k := range kinds {
		if k.key == "neg_repo_90" {
			run.add("neg_repo_events", fmt.Sprintf("NIP-77 by #a for one repository: its events (closest to %d)", repoSessionTarget), "events", float64(len(k.pos)))
		}
		label := "NIP-77 reconciliation, " + k.what
		switch {
		case k.missEvery > 0 && k.filter.Tags == nil:
			label += " (incl. fetching the 1 %)"
		case k.missEvery > 0:
			label = "NIP-77 by #a, " + k.what + " (incl. fetching the 10 %)"
		case k.filter.Tags != nil:
			label = "NIP-77 by #a, " + k.what
		}
		run.add(k.key, label, "ms", ms(medianNeg(k.rs, func(r negResult) time.Duration { return r.Duration })))
		if k.missEvery > 0 {
			run.add(k.key+"_reconcile", "  of which reconciling (the fetch overlaps it)", "ms", ms(medianNeg(k.rs, func(r negResult) time.Duration { return r.Reconcile })))
		}
		per := "  server CPU per reconciliation, "
		if k.filter.Tags != nil {
			per = "  server CPU per #a reconciliation, "
		}
		run.add(k.key+"_cpu", per+k.what, "ms", ms(k.cpu)/float64(runs))
		if k.missEvery > 0 && k.filter.Tags == nil {
			// grasp's own client (this process): its set, the sessions, and
			// checking the fetched events' signatures
			run.add(k.key+"_client_cpu", "  client CPU per reconciliation (grasp's catch-up), "+k.what, "ms", ms(k.clientCPU)/float64(runs))
		}
		run.Detail[strings.Replace(k.key, "neg_", "negentropy_", 1)] = k.rs
	}
	return nil
}

// negOnly, if set (`grasp-bench neg -only`), is the one reconciliation
// measureNegentropy runs.
var negOnly string

func medianNeg(rs []negResult, of func(negResult) time.Duration) time.Duration {
	d := make([]time.Duration, len(rs))
	for i, r := range rs {
		d[i] = of(r)
	}
	slices.Sort(d)
	return d[len(d)/2]
}
