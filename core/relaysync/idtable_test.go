package relaysync

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// The id table answers what a map of ids would through inserts, removals
// (each shifting back what was probed past it) and shrinks, at loads up to
// three quarters.
func TestIDTableFollowsInsertsAndRemoves(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var events [][32]byte
	var free []uint32
	want := map[[32]byte]uint32{}
	tab := newIDTable()
	pool := make([][32]byte, 3000)
	for i := range pool {
		r.Read(pool[i][:])
	}
	check := func(step int) {
		t.Helper()
		if tab.count != len(want) {
			t.Fatalf("step %d: table counts %d, want %d", step, tab.count, len(want))
		}
		for _, id := range pool {
			pos, ok := tab.find(events, &id)
			wpos, wok := want[id]
			if ok != wok || pos != wpos {
				t.Fatalf("step %d: find %x = %d %v, want %d %v", step, id[:4], pos, ok, wpos, wok)
			}
		}
	}
	for step := range 20_000 {
		id := pool[r.Intn(len(pool))]
		if pos, ok := want[id]; ok {
			if r.Intn(3) > 0 {
				continue
			}
			tab.remove(events, pos)
			events[pos] = [32]byte{}
			free = append(free, pos)
			delete(want, id)
		} else {
			var pos uint32
			if n := len(free); n > 0 && r.Intn(2) == 0 {
				pos, free = free[n-1], free[:n-1]
				events[pos] = id
			} else {
				pos = uint32(len(events))
				events = append(events, id)
			}
			tab.insert(events, pos)
			want[id] = pos
		}
		if step%997 == 0 {
			tab.shrink(events)
		}
		if step%2000 == 1999 {
			check(step)
		}
	}
	check(-1)
	for id, pos := range want {
		tab.remove(events, pos)
		delete(want, id)
		if len(want)%500 == 0 {
			check(-2)
		}
	}
	tab.shrink(events)
	if tab.count != 0 || len(tab.slots) != 0 {
		t.Fatalf("empty table keeps %d entries, %d slots", tab.count, len(tab.slots))
	}
}

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
	t.Logf("%.1f B of heap per root event (lookup %d B)", perRoot, x.eventIdx.bytes()/n)
	// ~55 B (the table just grown: 10 B of lookup); ~97 with the map.
	if perRoot > 64 {
		t.Errorf("%.1f B of heap per root event, want at most 64", perRoot)
	}
}
