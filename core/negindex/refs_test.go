package negindex

import (
	"encoding/hex"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// Postings of values that are ids of indexed events are kept as those
// events' slots (refs, postings.go). Through adds, removals of the named
// events (their slots held back, then reused), loads and the merges in
// between, a tag filter answers exactly the events carrying the value, as
// a scan of the indexed events does.
func TestPostingsOfIndexedIDsFollowAddsRemovesAndLoads(t *testing.T) {
	r := rand.New(rand.NewSource(27))
	const n = 6000
	pool := make([]Event, n)
	for i := range pool {
		r.Read(pool[i].ID[:])
		pool[i].CreatedAt = uint32(r.Intn(500))
	}
	var strangers []string // values no pool event has as its id
	for range 50 {
		var b [32]byte
		r.Read(b[:])
		strangers = append(strangers, hex.EncodeToString(b[:]))
	}
	letters := []string{"e", "E", "q"}
	for i := range pool {
		for range 1 + r.Intn(3) {
			v := strangers[r.Intn(len(strangers))]
			if r.Intn(5) > 0 {
				v = hex.EncodeToString(pool[r.Intn(n)].ID[:])
			}
			pool[i].Tags = append(pool[i].Tags, [2]string{letters[r.Intn(len(letters))], v})
		}
	}
	in := map[int]bool{}
	ix := New(nil)
	check := func(phase string) {
		t.Helper()
		for range 60 {
			letter := letters[r.Intn(len(letters))]
			values := []string{hex.EncodeToString(pool[r.Intn(n)].ID[:])}
			if r.Intn(4) == 0 {
				values = append(values, strangers[r.Intn(len(strangers))])
			}
			var want []string
			for i := range in {
				for _, tg := range pool[i].Tags {
					if tg[0] == letter && slices.Contains(values, tg[1]) {
						want = append(want, hex.EncodeToString(pool[i].ID[:]))
						break
					}
				}
			}
			snap, ok, err := ix.Select(nostr.Filter{Tags: nostr.TagMap{letter: values}}, n)
			if !ok || err != nil {
				t.Fatalf("%s: %v %v", phase, ok, err)
			}
			got := snap.IDs()
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, #%s %v: %d events, want %d", phase, letter, values, len(got), len(want))
			}
		}
	}
	step := func(steps int, phase string) {
		for s := range steps {
			i := r.Intn(n)
			if in[i] && r.Intn(2) == 0 {
				ix.Remove(pool[i])
				delete(in, i)
			} else {
				ix.Add(pool[i])
				in[i] = true
			}
			if s%2500 == 2499 {
				check(fmt.Sprint(phase, " step ", s))
			}
		}
	}
	step(20_000, "added")
	if len(ix.postings.refVals) == 0 {
		t.Fatal("no value became a ref: the test does not exercise them")
	}
	var loaded []Event
	for i := range in {
		loaded = append(loaded, pool[i])
	}
	ix.Load(loaded)
	check("loaded")
	step(20_000, "after load")
	for i := range in {
		ix.Remove(pool[i])
		delete(in, i)
	}
	check("all removed")
	if ix.Len() != 0 {
		t.Fatalf("%d events left", ix.Len())
	}
}

// A 64-hex value that is the id of an indexed event (an `e` tag naming a
// stored root or parent: most such values in a store) costs its postings
// ~9 bytes, loaded or grown by Add, against 37–40 for any other value
// (TestPostingsHeapPerHexValue; issue 27 part 2). The id table that finds
// them is paid per event, with or without tags.
func TestPostingsHeapPerIndexedIDValue(t *testing.T) {
	const n = 200_000
	const maxPerValue = 14
	r := rand.New(rand.NewSource(4))
	events := make([]Event, 2*n)
	for i := range events {
		r.Read(events[i].ID[:])
		events[i].CreatedAt = uint32(i)
	}
	// Event i names event i^1: every value distinct, each an indexed id
	// (named before or after it is added).
	for i := range events {
		events[i].Tags = [][2]string{{"e", hex.EncodeToString(events[i^1].ID[:])}}
	}
	bare := make([]Event, len(events))
	for i := range events {
		bare[i] = Event{ID: events[i].ID, CreatedAt: events[i].CreatedAt}
	}
	perValue := func(tagged, plain []Event, grow bool) float64 {
		cost := func(evs []Event) int64 {
			before := heapAlloc()
			ix := New(nil)
			if grow {
				ix.Load(evs[:len(evs)/2])
				for i := len(evs) / 2; i < len(evs); i++ {
					ix.Add(evs[i])
				}
			} else {
				ix.Load(evs)
			}
			after := heapAlloc()
			runtime.KeepAlive(ix)
			return after - before
		}
		cp, ct := cost(plain), cost(tagged)
		cp, ct = max(cp, cost(plain)), min(ct, cost(tagged))
		return float64(ct-cp) / float64(len(tagged))
	}
	loaded := perValue(events[:n], bare[:n], false)
	grown := perValue(events, bare, true)
	t.Logf("postings: %.1f bytes per value naming an indexed event loaded, %.1f loaded then grown by Add", loaded, grown)
	if loaded > maxPerValue || grown > maxPerValue {
		t.Errorf("postings take %.1f (loaded) and %.1f (grown) bytes per value naming an indexed event, more than %d", loaded, grown, maxPerValue)
	}
}

// heapAlloc is the live heap after a collection: what a structure built
// between two calls holds.
func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
