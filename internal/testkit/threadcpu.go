package testkit

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// ThreadCPU is the CPU time, in nanoseconds, of the OS thread it runs on
// (/proc/thread-self/schedstat, nanosecond resolution). A benchmark that
// compares two ways on a shared machine reads it around each with its
// goroutine locked to its thread (runtime.LockOSThread): other processes'
// load then stretches the wall but not this figure. It skips the benchmark
// where the kernel does not keep it.
func ThreadCPU(tb testing.TB) int64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		tb.Skip("no per-thread schedstat:", err)
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		tb.Skip("empty schedstat")
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return ns
}
