package main

import (
	"io"
	"math"
	"runtime/debug"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
)

// Audit F16 (issue 11 part 6): a server started with the defaults runs
// under a soft Go memory limit of 768 MiB (with resident_file_mb, the
// 1 GiB of issue 27 part 2); memory_limit_mb = 0 leaves the
// runtime without one. Not parallel: the limit is process-wide.
func TestAbuse_F16_DefaultSoftMemoryLimit(t *testing.T) {
	saved := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(saved) })

	debug.SetMemoryLimit(math.MaxInt64)
	if _, err := startLogging(config.Default(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 768<<20 {
		t.Fatalf("default config: Go memory limit %d, want %d (768 MiB)", got, 768<<20)
	}

	// Control: 0 means none.
	debug.SetMemoryLimit(math.MaxInt64)
	cfg := config.Default()
	cfg.Server.MemoryLimitMB = 0
	if _, err := startLogging(cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory_limit_mb = 0: Go memory limit %d, want none", got)
	}
}
