package negindex

import (
	"runtime"
	"testing"
)

// Loading a store's index at start-up allocates a few times the index it
// builds: what is garbage at once still raises the start-up peak and the
// collector's work under the memory limit (issue 27 part 2: start-up
// reached VmHWM 2.1 GiB at five million events). Bounded in bytes
// allocated per loaded event, events made before the count starts.
func TestLoadAllocationPerEvent(t *testing.T) {
	const n = 200_000
	events := corpusLikeEvents(n)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix := New(nil)
	ix.Load(events)
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(events)
	if ix.Len() != n {
		t.Fatalf("%d events indexed, want %d", ix.Len(), n)
	}
	perEvent := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes allocated per loaded event", perEvent)
	if perEvent > maxLoadAllocPerEvent {
		t.Errorf("Load allocates %.0f bytes per event, more than %d", perEvent, maxLoadAllocPerEvent)
	}
}

// 735 B with eachKey's seen-list grown from nil per event, 559 with it
// started on the stack (session 10); the rest is the entries' slice grown
// by append, the postings' merges and the text keys of non-hex values.
const maxLoadAllocPerEvent = 600
