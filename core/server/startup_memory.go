package server

import (
	"runtime"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/memlimit"
)

// returnStartupMemory returns what the start-up loads allocated to the
// system, once: sync's replay of the store's history (core/relaysync), which
// ends after the negentropy index has loaded on any store large enough for
// it to matter. The Go runtime keeps freed memory mapped up to about its
// heap goal, twice the live heap at the last collection — and during the
// replay that live heap held its batches' decoded records too: a restarted
// million-event server stayed at ~950 MiB of anonymous memory with 350 MiB
// of it live (issue 27 part 2). One forced collection (~0.3 s of CPU at a
// million events) hands the rest back; the heap then regrows only with
// what the server does. The live heap is exact then, so the memory-limit
// watch compares it at once rather than at its next minute.
func returnStartupMemory(log hclog.Logger, watch *memlimit.Watch) func() {
	return func() {
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		log.Info("start-up loads done: memory returned to the system",
			"heap_live_mb", ms.HeapAlloc>>20, "heap_released_mb", ms.HeapReleased>>20, "runtime_mb", ms.Sys>>20)
		if watch != nil {
			watch.Check()
		}
	}
}
