// Package memlimit watches the live heap against the Go runtime's soft
// memory limit (server.memory_limit_mb) and tells the operator when the
// store has outgrown it.
//
// Why: the limit's default is sized for a million events (about 2.2× their
// live heap). A larger store's live heap passes half the limit and the
// collector then runs because of the limit, not because the heap doubled,
// and may take up to half the CPU: at 4.4 million events on the default
// 768 MiB the server held 1,033 MiB of anonymous memory and ingested ~330
// events/s, against ~2,200 at a million (issue 27, session 7). Nothing in
// the log said so. Now it does, with the value to set.
//
// It never changes the limit itself: how much memory a server may take is
// the operator's decision (config.md), and it never refuses memory.
package memlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// The live heap may reach this share of the limit (in percent) before the
// limit, not the heap's doubling, paces the collector (GOGC=100 lets the
// heap grow to twice its live size first).
const sharePercent = 45

// Advice reports whether live (bytes of live heap) is past what limit
// (bytes; 0 or less: none) leaves room for, and the limit in MiB to set:
// 2.2× live, what config.md recommends.
func Advice(live uint64, limit int64) (over bool, suggestMB uint64) {
	if limit <= 0 {
		return false, 0
	}
	suggestMB = (live*22/10 + 1<<20 - 1) >> 20
	return live*100 > uint64(limit)*sharePercent, suggestMB
}

// Watch logs a warning when the live heap passes the limit's share, and
// again each time it has grown a quarter more since the last warning (a
// store that keeps growing keeps being reported, a steady one once).
type Watch struct {
	Log   hclog.Logger
	Live  func() uint64 // bytes of live heap; LiveHeap by default
	Limit func() int64  // the soft limit in bytes, 0 for none; Limit by default
	// ConfigKey names the setting in the warning.
	ConfigKey string

	mu     sync.Mutex // the scheduler's loop and the start-up hook both check
	warned uint64     // live heap at the last warning
}

// Check compares once; it is what a ticker calls. It reports whether it
// warned.
func (w *Watch) Check() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	live, limit := LiveHeap, Limit
	if w.Live != nil {
		live = w.Live
	}
	if w.Limit != nil {
		limit = w.Limit
	}
	l, lim := live(), limit()
	over, suggest := Advice(l, lim)
	if !over {
		w.warned = 0
		return false
	}
	if w.warned != 0 && l*4 < w.warned*5 {
		return false
	}
	w.warned = l
	key := w.ConfigKey
	if key == "" {
		key = "server.memory_limit_mb"
	}
	w.Log.Warn("the live heap has outgrown the memory limit: the collector now runs for the limit and takes up to half the CPU; raise the limit (or set 0 for none)",
		"heap_live_mb", l>>20, "limit_mb", lim>>20, "key", key, "suggested_mb", suggest)
	return true
}

// LiveHeap is the heap the last collection found live.
func LiveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// Limit is the runtime's soft memory limit in bytes, 0 when none is set.
func Limit() int64 {
	l := debug.SetMemoryLimit(-1) // a negative value reads without setting
	if l == math.MaxInt64 {
		return 0
	}
	return l
}
