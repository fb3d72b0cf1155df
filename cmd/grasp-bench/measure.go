package main

import (
	"context"
	"fmt"
	"slices"
	"time"
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
func measureNegentropy(ctx context.Context, p *proc, c *corpus, n, runs int, run *serverRun) error {
	runs = max(1, runs)
	var partial, insync []negResult
	var partialCPU, insyncCPU time.Duration
	for range runs {
		for _, missEvery := range []int{100, 0} {
			before, err := threadCPU(p.pid())
			if err != nil {
				return err
			}
			r, err := runNegentropy(ctx, p.wsURL(), c, n, missEvery)
			if err != nil {
				return fmt.Errorf("negentropy (missing 1 in %d): %w", missEvery, err)
			}
			after, err := threadCPU(p.pid())
			if err != nil {
				return err
			}
			if missEvery > 0 {
				partial, partialCPU = append(partial, r), partialCPU+after-before
			} else {
				insync, insyncCPU = append(insync, r), insyncCPU+after-before
			}
		}
	}
	run.add("neg_99", "NIP-77 reconciliation, 99 % held (incl. fetching the 1 %)", "ms", ms(medianNeg(partial)))
	run.add("neg_99_cpu", "  server CPU per reconciliation, 99 % held", "ms", ms(partialCPU)/float64(runs))
	run.add("neg_insync", "NIP-77 reconciliation, all held", "ms", ms(medianNeg(insync)))
	run.add("neg_insync_cpu", "  server CPU per reconciliation, all held", "ms", ms(insyncCPU)/float64(runs))
	run.Detail["negentropy_99"], run.Detail["negentropy_insync"] = partial, insync
	return nil
}

func medianNeg(rs []negResult) time.Duration {
	d := make([]time.Duration, len(rs))
	for i, r := range rs {
		d[i] = r.Duration
	}
	slices.Sort(d)
	return d[len(d)/2]
}
