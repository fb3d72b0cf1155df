package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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
// children, or nothing without its pid. Every child calls setsid() when it
// starts (InitPostmasterChild), so they are found by their parent, not by
// the postmaster's process group (which held the postmaster alone); the
// CPU of children that have exited is the postmaster's cutime and cstime,
// and their bytes were added to its I/O counters when it reaped them.
func (p *pgCluster) sample() (cpu time.Duration, written int64) {
	if p.pid <= 0 {
		return 0, 0
	}
	parent := strconv.Itoa(p.pid)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat)[i+1:])
		// f[1] is the parent; utime, stime, cutime and cstime are f[11]
		// to f[14].
		if len(f) < 15 || (pid != p.pid && f[1] != parent) {
			continue
		}
		fields := []int{11, 12}
		if pid == p.pid {
			fields = append(fields, 13, 14)
		}
		for _, k := range fields {
			t, _ := strconv.ParseInt(f[k], 10, 64)
			cpu += time.Duration(t) * time.Second / userHZ
		}
		io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(io), "\n") {
			if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				written += n
			}
		}
	}
	return cpu, written
}
