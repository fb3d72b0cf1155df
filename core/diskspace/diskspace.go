// Package diskspace owns the free-space watermark of the data directory:
// below it, writes strangers can cause (git pushes, held events, event
// writes) are refused with a readable error instead of filling the disk. A
// full disk crashed the process with SIGBUS in badger's mmap writes (audit
// 2026-11, F12), and anonymous pushes could fill it (F02). It only
// measures and answers; it never deletes anything and never refuses reads.
package diskspace

import (
	"fmt"
	"syscall"

	"github.com/grasp-dev/grasp/core/outcome"
)

// Free reports the bytes an unprivileged process can still write under
// dir (statfs: blocks available to non-root times block size).
func Free(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// Guard checks the watermark of one directory. The zero value and a nil
// *Guard allow everything.
type Guard struct {
	dir  string
	min  uint64
	free func(dir string) (uint64, error)
}

// New guards dir, keeping minFree bytes free; free measures (nil: Free).
// minFree 0 disables the check.
func New(dir string, minFree uint64, free func(dir string) (uint64, error)) *Guard {
	if free == nil {
		free = Free
	}
	return &Guard{dir: dir, min: minFree, free: free}
}

// Check returns nil when a write may go ahead, else an error whose text is
// the client's answer ("error: ..."). A failed measurement allows the
// write: the watermark is a guard against filling the disk, not a second
// way to stop the server.
func (g *Guard) Check() error {
	if g == nil || g.min == 0 {
		return nil
	}
	n, err := g.free(g.dir)
	if err != nil || n >= g.min {
		return nil
	}
	return outcome.Errorf(outcome.Error, "this server is low on disk space (%d MiB free, it keeps %d MiB); writes are refused until the operator frees space", n>>20, g.min>>20)
}
