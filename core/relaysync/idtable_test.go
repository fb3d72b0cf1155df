package relaysync

import (
	"fmt"
	"runtime"
	"testing"
)

// Issue 27 part 2: the repository index's root events, per root event: the
// id (32 B), its first repository (4), its position in the repository's
// list of roots (4 with append's slack) and the lookup, which was a map of
// 8-byte prefixes (~18–37 B a root depending on where the map was in its
// growth) and is a table of 4-byte slots.
func TestRepoIndexHeapPerRootEvent(t *testing.T) {
	const n, repos = 200_000, 1000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%064x", uint64(i)*0x9e3779b97f4a7c15)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := NewRepoSyncIndex()
	for i, id := range ids {
		if _, err := x.AddRootEvent(repoAddr(i%repos), id); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ids)
	if x.RootEventCount() != n {
		t.Fatalf("%d root events, want %d", x.RootEventCount(), n)
	}
	perRoot := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.1f B of heap per root event (lookup %d B)", perRoot, x.eventIdx.Bytes()/n)
	// ~55 B (the table just grown: 10 B of lookup); ~97 with the map.
	if perRoot > 64 {
		t.Errorf("%.1f B of heap per root event, want at most 64", perRoot)
	}
}
