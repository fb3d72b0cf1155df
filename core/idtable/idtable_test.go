package idtable

import (
	"math/rand"
	"testing"
)

type ids [][32]byte

func (e *ids) ID(pos uint32) *[32]byte { return &(*e)[pos] }

// The table answers what a map of ids would through inserts, removals (each
// shifting back what was probed past it), reservations and shrinks, at
// loads up to three quarters.
func TestTableFollowsInsertsAndRemoves(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var events ids
	var free []uint32
	want := map[[32]byte]uint32{}
	tab := New()
	pool := make([][32]byte, 3000)
	for i := range pool {
		r.Read(pool[i][:])
	}
	check := func(step int) {
		t.Helper()
		if tab.Len() != len(want) {
			t.Fatalf("step %d: table counts %d, want %d", step, tab.Len(), len(want))
		}
		for _, id := range pool {
			pos, ok := tab.Find(&events, &id)
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
			tab.Remove(&events, pos)
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
			tab.Insert(&events, pos)
			want[id] = pos
		}
		switch {
		case step%997 == 0:
			tab.Shrink(&events)
		case step%1511 == 0:
			tab.Reserve(&events, 2*len(want))
		}
		if step%2000 == 1999 {
			check(step)
		}
	}
	check(-1)
	for id, pos := range want {
		tab.Remove(&events, pos)
		delete(want, id)
		if len(want)%500 == 0 {
			check(-2)
		}
	}
	tab.Shrink(&events)
	if tab.Len() != 0 || tab.Slots() != 0 {
		t.Fatalf("empty table keeps %d entries, %d slots", tab.Len(), tab.Slots())
	}
}

// Reserve sizes the table once for a load: inserting that many ids
// afterwards never grows it.
func TestReserveAvoidsGrowth(t *testing.T) {
	const n = 10_000
	r := rand.New(rand.NewSource(3))
	events := make(ids, n)
	for i := range events {
		r.Read(events[i][:])
	}
	tab := New()
	tab.Reserve(&events, n)
	size := tab.Slots()
	for i := range events {
		tab.Insert(&events, uint32(i))
	}
	if tab.Slots() != size || size*3 < n*4 {
		t.Fatalf("reserved %d slots for %d ids, %d after inserting them", size, n, tab.Slots())
	}
	for i := range events {
		if pos, ok := tab.Find(&events, &events[i]); !ok || pos != uint32(i) {
			t.Fatalf("find %d = %d %v", i, pos, ok)
		}
	}
}
