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

// sample sums the CPU time and bytes written of every process of the
// server (the postmaster and its backends share its process group), or
// nothing without its pid.
func (p *pgCluster) sample() (cpu time.Duration, written int64) {
	if p.pid <= 0 {
		return 0, 0
	}
	pgid := processGroup(p.pid)
	if pgid == "" {
		return 0, 0
	}
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
		// f[2] is the process group; utime and stime are f[11] and f[12].
		if len(f) < 13 || f[2] != pgid {
			continue
		}
		for _, k := range []int{11, 12} {
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

// processGroup is pid's process group, "" if pid is gone.
func processGroup(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(stat)[i+1:])
	if len(f) < 3 {
		return ""
	}
	return f[2]
}
