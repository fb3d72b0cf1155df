package proctree

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A child that burns CPU and writes a file is counted under its parent:
// while it runs through its own /proc entries, after it was reaped through
// the parent's counters.
func TestSampleCountsAChildsCPUAndWrites(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/<pid>/io here:", err)
	}
	cpu0, w0 := Sample(os.Getpid())
	dir := t.TempDir()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Type == 0x01021994 {
		t.Skip("the temporary directory is on tmpfs (or unknown): nothing reaches a disk to count")
	}
	out := dir + "/f"
	// dd writes 8 MiB and syncs it, so write_bytes sees it; the loop before
	// it spends CPU in the child.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; dd if=/dev/zero of="+out+" bs=1M count=8 conv=fsync 2>/dev/null")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	cpu1, w1 := Sample(os.Getpid())
	if cpu1-cpu0 < 10*time.Millisecond {
		t.Errorf("CPU %v → %v: the reaped child's CPU is not counted", cpu0, cpu1)
	}
	if w1-w0 < 8<<20 {
		t.Errorf("write_bytes %d → %d: the reaped child's 8 MiB are not counted", w0, w1)
	}
	if got := Parent(os.Getpid()); got != os.Getppid() {
		t.Errorf("Parent(self) = %d, want %d", got, os.Getppid())
	}
	if c, w := Sample(0); c != 0 || w != 0 {
		t.Errorf("Sample(0) = %v, %d; want nothing", c, w)
	}
}
