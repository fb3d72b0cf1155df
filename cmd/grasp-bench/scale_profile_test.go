package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
)

// Issue 27 part 3: a phase's rows tell the collector's share of the CPU apart
// from badger's compactions' and the query path's. A profile made by hand
// (2 s in the mark workers, 1 s in a compaction, 1 s in an assist inside a
// query, 4 s in queries) and two runtime samples must give those shares, not
// some other split.
func TestPhaseRowsSplitCollectorCompactionAndQueries(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	funcs := []*profile.Function{
		fn(1, "runtime.gcBgMarkWorker"), fn(2, "runtime.gcDrain"),
		fn(3, "github.com/dgraph-io/badger/v4.(*levelsController).runCompactor"),
		fn(4, "github.com/dgraph-io/badger/v4.(*levelsController).compactBuildTables.func3"),
		fn(5, "github.com/grasp-dev/grasp/core/store.(*badgerStore).Query"),
		fn(6, "github.com/dgraph-io/badger/v4.(*levelsController).get"),
		fn(7, "runtime.gcAssistAlloc"),
	}
	loc := func(id uint64, f *profile.Function) *profile.Location {
		return &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	}
	var locs []*profile.Location
	for i, f := range funcs {
		locs = append(locs, loc(uint64(i+1), f))
	}
	const s = int64(1e9)
	sample := func(ns int64, stack ...int) *profile.Sample { // leaf first
		smp := &profile.Sample{Value: []int64{ns / 1e7, ns}}
		for _, i := range stack {
			smp.Location = append(smp.Location, locs[i-1])
		}
		return smp
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     1e7,
		Function:   funcs,
		Location:   locs,
		Sample: []*profile.Sample{
			sample(2*s, 2, 1),  // mark worker
			sample(s/2, 4, 3),  // a compaction
			sample(s/2, 4),     // its sub-compaction goroutine
			sample(s, 7, 6, 5), // an assist inside a query
			sample(4*s, 6, 5),  // the query path (levelsController.get is not compaction)
		},
	}
	path := filepath.Join(t.TempDir(), "queries-grasp-1000.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	sh, err := profileShares(path)
	if err != nil {
		t.Fatal(err)
	}
	run := &serverRun{}
	before := runtimeSample{
		"/gc/cycles/total:gc-cycles": 100, "/cpu/classes/gc/total:cpu-seconds": 10, "/cpu/classes/gc/mark/assist:cpu-seconds": 1,
		"/cpu/classes/total:cpu-seconds": 100, "/cpu/classes/idle:cpu-seconds": 40,
	}
	after := runtimeSample{
		"/gc/cycles/total:gc-cycles": 130, "/cpu/classes/gc/total:cpu-seconds": 13, "/cpu/classes/gc/mark/assist:cpu-seconds": 2,
		"/cpu/classes/total:cpu-seconds": 120, "/cpu/classes/idle:cpu-seconds": 48,
		"/gc/heap/live:bytes": 400 << 20, "/gc/heap/goal:bytes": 700 << 20, "/gc/gomemlimit:bytes": 768 << 20,
	}
	phaseRows(run, "queries", before, after, sh)
	want := map[string]float64{
		"gc_cycles_queries":    30,
		"gc_cpu_queries":       25, // 3 s of GC in 12 s busy
		"gc_assist_queries":    100.0 / 12,
		"heap_live_queries":    400,
		"heap_goal_queries":    700,
		"heap_limit_queries":   768,
		"prof_gc_queries":      100 * 3.0 / 8,
		"prof_compact_queries": 100 * 1.0 / 8,
		"prof_cpu_queries":     8,
	}
	for k, w := range want {
		v, ok := run.get(k)
		if !ok || math.Abs(v-w) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, w)
		}
	}
	// No limit set (math.MaxInt64): no limit row.
	run = &serverRun{}
	after["/gc/gomemlimit:bytes"] = math.MaxInt64
	phaseRows(run, "nip77", before, after, sh)
	if _, ok := run.get("heap_limit_nip77"); ok {
		t.Error("a row for the memory limit with none set")
	}
	if _, ok := run.get("gc_cycles_nip77"); !ok {
		t.Error("no GC cycles row for the NIP-77 phase")
	}
}
