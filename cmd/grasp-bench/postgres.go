package main

import (
	"time"

	"github.com/grasp-dev/grasp/internal/proctree"
)

// pgCluster is the PostgreSQL server grasp-postgres (grasp with
// store.backend "postgres") runs on: one the operator provides (-postgres-url
// names an empty database), so that it runs as production servers do,
// durable, not test's throwaway clusters (internal/pgtest, for tests only).
// With -postgres-pid (the postmaster), its CPU and bytes written are
// reported beside grasp's.
type pgCluster struct {
	url string
	pid int
}

// sample sums the CPU time and bytes written of the postmaster and its
// children (internal/proctree), or nothing without its pid.
func (p *pgCluster) sample() (cpu time.Duration, written int64) {
	return proctree.Sample(p.pid)
}
