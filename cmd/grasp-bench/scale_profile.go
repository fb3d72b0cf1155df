package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// profileIngest starts the CPU profiles of one scale point's ingest when dir
// is set: the server's (through its benchprofile switch) and the bench
// client's own, both on the same cores. The returned function stops both;
// with dir empty it does nothing.
func profileIngest(dir string, p *proc, server string, events int) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	file, err := profileFile(dir, "ingest", server, events)
	if err != nil {
		return nil, err
	}
	clientFile, err := profileFile(dir, "ingest-client", server, events)
	if err != nil {
		return nil, err
	}
	if err := p.startProfile(file); err != nil {
		return nil, err
	}
	f, err := os.Create(clientFile)
	if err != nil {
		_ = p.stopProfile()
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		_ = p.stopProfile()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		cerr := f.Close()
		if err := p.stopProfile(); err != nil {
			return err
		}
		return cerr
	}, nil
}

// profileFile is where -profile's profile of one kind (ingest,
// ingest-client, queries, nip77) for one server at one point goes: an
// absolute path, since the server writes it from its own directory.
func profileFile(dir, kind, server string, events int) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(abs, fmt.Sprintf("%s-%s-%d.pprof", kind, server, events)), nil
}

// runtimeSample is the server's GET /runtime answer (core/profiling's
// RuntimeMetrics): runtime/metrics names → values.
type runtimeSample map[string]float64

// runtimeFigures asks the server's benchprofile switch for its collector
// figures; nil without a switch.
func (p *proc) runtimeFigures() (runtimeSample, error) {
	if p.profile == "" {
		return nil, nil
	}
	var s runtimeSample
	if err := p.profileCall(http.MethodGet, "/runtime", &s); err != nil {
		return nil, err
	}
	return s, nil
}

// profilePhase brackets one measuring phase of a scale point (queries,
// NIP-77) when dir is set: the server's CPU profile of the phase
// (PHASE-SERVER-N.pprof) and its collector figures before and after. The
// returned function stops the profile and adds the phase's rows to run
// (phaseRows); with dir empty both do nothing.
//
// The rows exist to tell apart the two suspects of a slow phase after a
// large ingest (issue 27 part 3): the collector paced by the memory limit
// (many cycles, a large GC share) and badger still compacting what the
// ingest wrote (a large share of the profile in its compaction goroutines).
func profilePhase(dir string, p *proc, server, phase string, events int) (end func(run *serverRun) error, err error) {
	if dir == "" || p.profile == "" {
		return func(*serverRun) error { return nil }, nil
	}
	file, err := profileFile(dir, phase, server, events)
	if err != nil {
		return nil, err
	}
	before, err := p.runtimeFigures()
	if err != nil {
		return nil, err
	}
	if err := p.startProfile(file); err != nil {
		return nil, err
	}
	return func(run *serverRun) error {
		if err := p.stopProfile(); err != nil {
			return err
		}
		after, err := p.runtimeFigures()
		if err != nil {
			return err
		}
		shares, err := profileShares(file)
		if err != nil {
			return err
		}
		phaseRows(run, phase, before, after, shares)
		return nil
	}, nil
}

// phaseLabels names the phases in the table's rows.
var phaseLabels = map[string]string{"queries": "queries", "nip77": "NIP-77 runs"}

// phaseRows adds one phase's collector and profile figures to run: the
// collections in the phase, the collector's share of the CPU the runtime
// counts as busy (everything but idle), of which assists, the heap's live
// bytes, goal and limit at its end, and from the phase's CPU profile the
// shares in the collector and in badger's compactions and memtable flushes.
func phaseRows(run *serverRun, phase string, before, after runtimeSample, sh cpuShares) {
	label := phaseLabels[phase]
	d := func(name string) float64 { return after[name] - before[name] }
	busy := d("/cpu/classes/total:cpu-seconds") - d("/cpu/classes/idle:cpu-seconds")
	share := func(v float64) float64 {
		if busy <= 0 {
			return 0
		}
		return 100 * v / busy
	}
	const mib = 1 << 20
	run.add("gc_cycles_"+phase, "  GC cycles during "+label, "cycles", d("/gc/cycles/total:gc-cycles"))
	run.add("gc_cpu_"+phase, "  GC CPU share during "+label+" (runtime/metrics, of busy CPU)", "%", share(d("/cpu/classes/gc/total:cpu-seconds")))
	run.add("gc_assist_"+phase, "    of which assists by allocating goroutines", "%", share(d("/cpu/classes/gc/mark/assist:cpu-seconds")))
	run.add("heap_live_"+phase, "  heap live after "+label+" (at the last GC)", "MiB", after["/gc/heap/live:bytes"]/mib)
	run.add("heap_goal_"+phase, "  heap goal after "+label, "MiB", after["/gc/heap/goal:bytes"]/mib)
	if limit := after["/gc/gomemlimit:bytes"]; limit > 0 && limit < 1<<62 {
		run.add("heap_limit_"+phase, "  memory limit (GOMEMLIMIT) during "+label, "MiB", limit/mib)
	}
	run.add("prof_gc_"+phase, "  profile of "+label+": share in the collector (gcBgMarkWorker, assists, sweep)", "%", sh.pct(sh.GC))
	run.add("prof_compact_"+phase, "  profile of "+label+": share in badger compactions and memtable flushes", "%", sh.pct(sh.Compaction))
	run.add("prof_cpu_"+phase, "  profile of "+label+": server CPU sampled", "s", sh.Total.Seconds())
}

// cpuShares is a CPU profile's time split by what the goroutines were doing.
type cpuShares struct {
	Total, GC, Compaction time.Duration
}

func (s cpuShares) pct(d time.Duration) float64 {
	if s.Total <= 0 {
		return 0
	}
	return 100 * float64(d) / float64(s.Total)
}

// gcFrames and compactionFrames name the functions whose presence anywhere
// in a sample's stack puts it in the collector or in badger's background
// compaction. Compaction's functions are matched by name, not by package:
// the levels controller's get is on every query's path.
var (
	gcFrames = []string{
		"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcStart",
	}
	compactionFrames = []string{
		"(*levelsController).runCompactor", "(*levelsController).doCompact", "(*levelsController).compactBuildTables",
		"(*levelsController).subcompact", "(*DB).flushMemtable", "(*DB).handleMemTableFlush",
	}
)

// profileShares reads a CPU profile and splits its CPU time (the
// cpu/nanoseconds sample value) into the collector's, badger's compactions'
// and the total.
func profileShares(path string) (cpuShares, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuShares{}, err
	}
	defer f.Close()
	prof, err := profile.Parse(f)
	if err != nil {
		return cpuShares{}, fmt.Errorf("%s: %w", path, err)
	}
	vi := -1
	for i, st := range prof.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			vi = i
		}
	}
	if vi < 0 {
		return cpuShares{}, fmt.Errorf("%s: no cpu/nanoseconds samples", path)
	}
	var s cpuShares
	for _, smp := range prof.Sample {
		v := time.Duration(smp.Value[vi])
		s.Total += v
		switch {
		case stackHas(smp, gcFrames):
			s.GC += v
		case stackHas(smp, compactionFrames):
			s.Compaction += v
		}
	}
	return s, nil
}

func stackHas(smp *profile.Sample, names []string) bool {
	for _, loc := range smp.Location {
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			for _, n := range names {
				if strings.Contains(ln.Function.Name, n) {
					return true
				}
			}
		}
	}
	return false
}
