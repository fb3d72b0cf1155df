// Package proctree owns reading a process tree from /proc: a process's
// parent, and what a process and its direct children have spent, their CPU
// time and the bytes they caused to be written (write_bytes). The scale bench and the store's PostgreSQL benchmark both
// charge a PostgreSQL cluster's work to the events they send it this way.
// It only reads /proc; it never signals or waits for a process.
package proctree

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// Sample sums the CPU time and write_bytes of root and its children, or
// nothing for a root <= 0. Children are found by their parent, not by a
// process group: PostgreSQL's backends call setsid() when they start. The
// CPU of children that have exited is root's cutime and cstime, and their
// bytes were added to root's I/O counters when it reaped them.
func Sample(root int) (cpu time.Duration, written int64) {
	if root <= 0 {
		return 0, 0
	}
	parent := strconv.Itoa(root)
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
		if len(f) < 15 || (pid != root && f[1] != parent) {
			continue
		}
		fields := []int{11, 12}
		if pid == root {
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

// Parent is pid's parent process (PPid in /proc/<pid>/status), or 0 when
// /proc does not show it.
func Parent(pid int) int {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
