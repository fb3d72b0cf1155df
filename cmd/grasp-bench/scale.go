package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// scaleOpts are the flags of the scale command.
type scaleOpts struct {
	commonOpts
	points           []int
	baselineBudget   time.Duration
	libsecp          bool
	verifyGoroutines int
	verifyFor        time.Duration
	// postgres is the database of grasp-postgres (nil: not measured);
	// postgresMax the largest point it is measured at.
	postgres    *pgCluster
	postgresMax int
	// corpusEvents draws the points from the cached corpus of this many
	// events when it is larger than the last point (0: the last point's).
	corpusEvents int
	// only, when set, names the servers measured (the others are left
	// out): a column measured again without the whole curve.
	only []string
	// memoryLimitMB is grasp's server.memory_limit_mb (0: its default).
	// Past a few million events the default's live heap outgrows it and
	// the collector is paced by the limit: a curve that should tell the
	// store's own costs apart from that sets it.
	memoryLimitMB int
	// profileDir, when set, receives the server's CPU profile of each
	// point's ingest (grasp built with -tags benchprofile) and the bench
	// client's own, to say where an event's microseconds go, and the
	// server's profiles of the query and NIP-77 phases, whose collector
	// and compaction figures become rows of the table (profilePhase).
	profileDir string
}

// pointRun is one server's figures at one store size.
type pointRun struct {
	Events  int        `json:"events"`
	Run     *serverRun `json:"run,omitempty"`
	Skipped string     `json:"skipped,omitempty"`
}

// verifyResult is one library's signature-check ceiling.
type verifyResult struct {
	Library    string  `json:"library"`
	Goroutines int     `json:"goroutines"`
	Rate       float64 `json:"rate"`           // verifications per wall second
	PerCPU     float64 `json:"per_cpu_second"` // verifications per CPU second of the measuring process
	// Check* measure grasp's own check (core/sigcheck, its table of verified
	// signatures bypassed) on the same events right after: in the default
	// build its Schnorr verifier, not btcec's.
	CheckLibrary string  `json:"check_library,omitempty"`
	CheckRate    float64 `json:"check_rate,omitempty"`
	CheckPerCPU  float64 `json:"check_per_cpu_second,omitempty"`
}

type scaleResult struct {
	Points   []int                 `json:"points"` // the sizes measured (see corpus.boundary)
	Machine  machine               `json:"machine"`
	Command  string                `json:"command"`
	Corpus   corpusSummary         `json:"corpus"`
	Settings map[string]any        `json:"settings"`
	Verify   []verifyResult        `json:"verify"`
	Servers  map[string][]pointRun `json:"servers"`
}

func scaleCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grasp-bench scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o scaleOpts
	points := fs.String("points", "20000,200000,1000000", "store sizes at which to measure (events, ascending); the corpus is the largest, each point its prefix")
	o.register(fs)
	fs.DurationVar(&o.baselineBudget, "baseline-budget", 15*time.Minute, "skip the baseline at a point whose ingest its previous rate says would take longer")
	fs.BoolVar(&o.libsecp, "libsecp", true, "also measure grasp built with -tags libsecp256k1 (cgo) and the verification ceilings")
	fs.IntVar(&o.verifyGoroutines, "verify-goroutines", runtime.NumCPU(), "goroutines for the signature-verification ceiling")
	fs.DurationVar(&o.verifyFor, "verify-for", 10*time.Second, "how long each verification ceiling is measured")
	pgURL := fs.String("postgres-url", "", "also measure grasp on PostgreSQL (one instance) in this empty database (postgres://...), at the points up to -postgres-max")
	fs.IntVar(&o.postgresMax, "postgres-max", 200_000, "the largest point measured on PostgreSQL")
	fs.IntVar(&o.corpusEvents, "corpus-events", 0, "draw the points from the corpus of this many events (e.g. the million-event corpus already cached): its first events are the same as those of the full curve's points; 0 = the last point's corpus")
	only := fs.String("only", "", "measure only these servers, comma-separated (grasp, baseline, grasp-libsecp256k1, grasp-postgres); empty = all")
	fs.IntVar(&o.memoryLimitMB, "memory-limit-mb", 0, "grasp's server.memory_limit_mb (0 = its default)")
	fs.StringVar(&o.profileDir, "profile", "", "write CPU profiles of each point's ingest, the server's (ingest-SERVER-N.pprof) and the bench client's (ingest-client-SERVER-N.pprof), and the server's of its query and NIP-77 phases (queries-SERVER-N.pprof, nip77-SERVER-N.pprof) to this directory; the table gains each phase's GC cycles, GC CPU share, heap and the profile's shares in the collector and in badger's compactions")
	pgPid := fs.Int("postgres-pid", 0, "the PostgreSQL server's postmaster pid: its CPU and bytes written are reported beside grasp's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.Split(*points, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 100 || (len(o.points) > 0 && n <= o.points[len(o.points)-1]) {
			return fmt.Errorf("-points: %q is not an ascending list of sizes >= 100", *points)
		}
		o.points = append(o.points, n)
	}
	if *pgURL != "" {
		o.postgres = &pgCluster{url: *pgURL, pid: *pgPid}
	}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			s = strings.TrimSpace(s)
			if !slices.Contains([]string{serverGrasp, serverBaseline, serverLibsecp, serverPostgres}, s) {
				return fmt.Errorf("-only: unknown server %q", s)
			}
			o.only = append(o.only, s)
		}
		if !slices.Contains(o.only, serverBaseline) {
			o.build.noBaseline = true
		}
	}
	o.build.libsecp = o.libsecp
	o.build.profile = o.profileDir != ""
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
	}
	res, err := runScale(ctx, o, stderr)
	return emit(res, err, func(r *scaleResult) { writeScaleReport(stdout, o, r) }, o.jsonPath)
}

func runScale(ctx context.Context, o scaleOpts, stderr io.Writer) (*scaleResult, error) {
	logf := logger(stderr)
	res := &scaleResult{Machine: describeMachine(), Command: "grasp-bench " + strings.Join(os.Args[1:], " "), Servers: map[string][]pointRun{}}
	last := o.points[len(o.points)-1]
	tmp, cleanup, c, sum, err := o.prepare("grasp-bench-scale-", max(last, o.corpusEvents), logf)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	for i, n := range o.points {
		o.points[i] = c.boundary(n)
	}
	// The cap moves to a boundary as the points do, so that -postgres-max
	// 200000 keeps the point asked as 200000 (stored as 200,001).
	o.postgresMax = c.boundary(o.postgresMax)
	if o.corpusEvents > last {
		// a prefix of a larger corpus: describe what is stored
		sum = summarise(c, sum.Path, o.points[len(o.points)-1])
	}
	res.Corpus = sum
	res.Points = o.points
	negMax := 0
	if last+last/10 > 1_000_000 { // the default limit must cover the whole store
		negMax = last + last/10
	}
	res.Settings = map[string]any{
		"points": o.points, "conns": o.conns, "window": o.window, "queries_per_kind": o.queries, "neg_runs": o.negRuns,
		"baseline_budget": o.baselineBudget.String(), "baseline_sync_writes": o.baselineSync, "baseline_neg_limit": o.baselineNeg,
		"grasp_negentropy_max_events": negMax, "grasp_memory_limit_mb": o.memoryLimitMB,
	}
	bins, err := prepareBinaries(ctx, o.build, tmp, logf)
	if err != nil {
		return res, err
	}
	if o.libsecp {
		if res.Verify, err = verifyCeilings(ctx, o, last, tmp, logf); err != nil {
			return res, err
		}
	}
	// The baseline right after grasp: a run cut short (a timeout's
	// SIGTERM reports what finished) still has the ratios.
	servers := []string{serverGrasp, serverBaseline}
	if o.libsecp {
		servers = append(servers, serverLibsecp)
	}
	if o.postgres != nil && o.postgresMax >= o.points[0] {
		servers = append(servers, serverPostgres)
		bins.postgresURL = o.postgres.url
	}
	if len(o.only) > 0 {
		servers = slices.DeleteFunc(servers, func(s string) bool { return !slices.Contains(o.only, s) })
	}
	for _, name := range servers {
		var pg *pgCluster
		if name == serverPostgres {
			pg = o.postgres
		}
		dir, err := os.MkdirTemp(tmp, name+"-")
		if err != nil {
			return res, err
		}
		runs, err := scaleServer(ctx, name, bins, dir, c, o, negMax, pg, logf)
		res.Servers[name] = runs
		if !o.keep {
			os.RemoveAll(dir)
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", name, err)
		}
	}
	res.Machine.LoadAfter = loadAvg()
	return res, nil
}

// scaleServer fills one server point by point: each point adds the events
// between the previous point and this one, then measures queries and
// NIP-77 over everything stored so far.
// With pg (grasp-postgres), PostgreSQL's CPU and bytes written are
// reported beside grasp's.
func scaleServer(ctx context.Context, name string, bins binaries, dir string, c *corpus, o scaleOpts, negMax int, pg *pgCluster, logf func(string, ...any)) ([]pointRun, error) {
	sopts := serverOpts{negentropyMax: negMax, baselineSync: o.baselineSync, baselineNeg: o.baselineNeg, legacyConfig: o.legacyConfig, memoryLimitMB: o.memoryLimitMB, profile: o.profileDir != ""}
	p, _, err := startServer(ctx, name, bins, dir, sopts)
	if err != nil {
		return nil, err
	}
	defer func() { p.stop() }()
	done := newDoneSet(len(c.items))
	pushRepo := filepath.Join(dir, "seed.git")
	if _, err := gitRun(ctx, "", "init", "-q", "--bare", pushRepo); err != nil {
		return nil, err
	}
	var out []pointRun
	prev, lastRate := 0, 0.0
	skip := ""
	for pi, n := range o.points {
		if skip == "" && name == serverPostgres && n > o.postgresMax {
			skip = fmt.Sprintf("skipped: past -postgres-max %d", o.postgresMax)
		}
		if skip == "" && name == serverBaseline && lastRate > 0 {
			if eta := time.Duration(float64(n-prev) / lastRate * float64(time.Second)); eta > o.baselineBudget {
				skip = fmt.Sprintf("skipped: at its last rate of %.0f events/s, ingesting %d more events would take %s, over the budget of %s (-baseline-budget)",
					lastRate, n-prev, eta.Round(time.Minute), o.baselineBudget)
			}
		}
		if skip != "" {
			out = append(out, pointRun{Events: n, Skipped: skip})
			continue
		}
		pointStart := time.Now()
		peaks := watchMemory(p.pid())
		logf("%s: ingest events %s..%s", name, commas(int64(prev)), commas(int64(n)))
		run := &serverRun{Server: name, Detail: map[string]any{}}
		anns, states, activity := c.split(prev, n)
		sr, err := seedRepos(ctx, p, name != serverBaseline, c, anns, states, done, pushRepo)
		if err != nil {
			return out, fmt.Errorf("seed repositories to %d: %w", n, err)
		}
		run.Detail["seed"] = sr
		before, err := sampleProc(p.pid())
		if err != nil {
			return out, err
		}
		var pgCPU0 time.Duration
		var pgWritten0 int64
		if pg != nil {
			pgCPU0, pgWritten0 = pg.sample()
		}
		self, err := sampleProc(os.Getpid())
		if err != nil {
			return out, err
		}
		stopProfiles, err := profileIngest(o.profileDir, p, name, n)
		if err != nil {
			return out, err
		}
		total := len(activity)
		ing, err := ingest(ctx, p.wsURL(), c, activity, done, o.conns, o.window, func(answered int, el time.Duration) {
			rate := float64(answered) / el.Seconds()
			left := "?"
			if rate > 0 {
				left = (time.Duration(float64(total-answered)/rate) * time.Second).Round(time.Second).String()
			}
			logf("%s: %s of %s events answered, %.0f/s, about %s left (load %s)", name, commas(int64(answered)), commas(int64(total)), rate, left, loadAvg())
		})
		if perr := stopProfiles(); err == nil {
			err = perr
		}
		if err != nil {
			return out, fmt.Errorf("ingest to %d: %w", n, err)
		}
		selfAfter, err := sampleProc(os.Getpid())
		if err != nil {
			return out, err
		}
		if ing.Rejected > 0 {
			return out, fmt.Errorf("ingest to %d: %d events refused: %v", n, ing.Rejected, ing.Reasons)
		}
		after, err := sampleProc(p.pid())
		if err != nil {
			return out, err
		}
		seg := float64(len(activity))
		lastRate = ing.rate()
		logf("%s: ingested %s events in %s (%.0f/s)", name, commas(int64(len(activity))), ing.Elapsed.Round(time.Second), lastRate)
		run.add("ingest_rate", fmt.Sprintf("ingest (events %s→%s)", commas(int64(prev)), commas(int64(n))), "events/s", ing.rate())
		run.add("ingest_cpu", "server CPU per event", "µs", float64((after.cpu-before.cpu).Microseconds())/seg)
		run.add("ingest_client_cpu", "  bench client CPU per event (grasp-bench itself)", "µs", float64((selfAfter.cpu-self.cpu).Microseconds())/seg)
		run.add("ingest_ok_p50", "OK latency p50", "ms", ms(percentile(ing.lats, 0.5)))
		run.add("write_per_event", "bytes written per event", "B", float64(after.writeBytes-before.writeBytes)/seg)
		if pg != nil && pg.pid > 0 {
			pgCPU, pgWritten := pg.sample()
			run.add("pg_cpu", "  PostgreSQL CPU per event", "µs", float64((pgCPU-pgCPU0).Microseconds())/seg)
			run.add("pg_write", "  PostgreSQL bytes written per event", "B", float64(pgWritten-pgWritten0)/seg)
		}
		run.Detail["ingest"] = ing
		if name != serverLibsecp {
			t := time.Now()
			endPhase, err := profilePhase(o.profileDir, p, name, "queries", n)
			if err != nil {
				return out, err
			}
			if err := measureQueries(ctx, p, c, n, o.queries, o.seed, run); err != nil {
				return out, fmt.Errorf("at %d events: %w", n, err)
			}
			if err := endPhase(run); err != nil {
				return out, err
			}
			logf("%s: %d queries at %s events took %s", name, 4*o.queries, commas(int64(n)), time.Since(t).Round(time.Second))
			t = time.Now()
			if endPhase, err = profilePhase(o.profileDir, p, name, "nip77", n); err != nil {
				return out, err
			}
			if err := measureNegentropy(ctx, p.wsURL(), p.pid(), c, n, o.negRuns, run); err != nil {
				return out, fmt.Errorf("at %d events: %w", n, err)
			}
			if err := endPhase(run); err != nil {
				return out, err
			}
			logf("%s: NIP-77 runs at %s events took %s", name, commas(int64(n)), time.Since(t).Round(time.Second))
		}
		now, err := sampleProc(p.pid())
		if err != nil {
			return out, err
		}
		anonPeak, _ := peaks()
		_, disk := dirSizes(p.dataDir)
		run.add("disk_per_event", "data directory per event", "B", float64(disk)/float64(n))
		run.add("rss_peak", "RSS peak so far (VmHWM)", "MiB", float64(now.hwmKB)/1024)
		run.add("rss_anon_peak", "  anonymous RSS peak at this point (sampled each second)", "MiB", float64(anonPeak)/1024)
		run.add("rss_now", "RSS now", "MiB", float64(now.rssKB)/1024)
		run.add("rss_anon_now", "  of which anonymous (heap, caches)", "MiB", float64(now.anonKB)/1024)
		run.add("rss_file_now", "  of which mapped files", "MiB", float64(now.fileKB)/1024)
		if pi == len(o.points)-1 && name != serverBaseline && name != serverLibsecp {
			// Idle after a restart: the negentropy index loaded again from
			// disk, nothing asked.
			if err := p.stop(); err != nil {
				return out, err
			}
			if p, _, err = startServer(ctx, name, bins, dir, sopts); err != nil {
				return out, fmt.Errorf("restart: %w", err)
			}
			idle, err := waitIdle(p.pid(), 5*time.Minute)
			if err != nil {
				return out, fmt.Errorf("restart: %w", err)
			}
			run.add("rss_restart", "RSS idle after a restart", "MiB", float64(idle.rssKB)/1024)
			run.add("rss_restart_anon", "  of which anonymous", "MiB", float64(idle.anonKB)/1024)
		}
		out = append(out, pointRun{Events: n, Run: run})
		logf("%s: point %s done in %s", name, commas(int64(n)), time.Since(pointStart).Round(time.Second))
		prev = n
		if err := p.alive(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// watchMemory samples pid's memory every second until the returned
// function is called, which reports the peaks of anonymous and total RSS
// in KiB.
func watchMemory(pid int) func() (anonKB, rssKB int64) {
	stop := make(chan struct{})
	var anon, rss int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if s, err := sampleProc(pid); err == nil {
				anon, rss = max(anon, s.anonKB), max(rss, s.rssKB)
			}
			select {
			case <-t.C:
			case <-stop:
				return
			}
		}
	}()
	return func() (int64, int64) {
		close(stop)
		<-done
		return anon, rss
	}
}

// waitIdle waits until pid used less than 2 % of a CPU over 3 s (the
// negentropy index loaded, compactions done), at most max, and samples it.
func waitIdle(pid int, max time.Duration) (procSample, error) {
	deadline := time.Now().Add(max)
	prev, err := sampleProc(pid)
	if err != nil {
		return prev, err
	}
	for {
		time.Sleep(3 * time.Second)
		s, err := sampleProc(pid)
		if err != nil {
			return s, err
		}
		if s.cpu-prev.cpu < 60*time.Millisecond || time.Now().After(deadline) {
			return s, nil
		}
		prev = s
	}
}

// verifyCeilings measures signature checks per second with btcec (this
// binary) and with libsecp256k1 (this command rebuilt with the tag), on
// the same events.
func verifyCeilings(ctx context.Context, o scaleOpts, events int, tmp string, logf func(string, ...any)) ([]verifyResult, error) {
	logf("signature verification ceilings (%d goroutines, %s each)", o.verifyGoroutines, o.verifyFor)
	var out []verifyResult
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	bins := map[string]string{"btcec": filepath.Join(tmp, "grasp-bench"), "libsecp256k1": filepath.Join(tmp, "grasp-bench-libsecp256k1")}
	for _, lib := range []string{"btcec", "libsecp256k1"} {
		var tags []string
		if lib == "libsecp256k1" {
			tags = []string{"libsecp256k1"}
		}
		if err := goBuild(ctx, root, "./cmd/grasp-bench", bins[lib], tags); err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, bins[lib], "verify", "-events", strconv.Itoa(events), "-seed", strconv.FormatUint(o.seed, 10),
			"-corpus-dir", o.corpusDir, "-goroutines", strconv.Itoa(o.verifyGoroutines), "-for", o.verifyFor.String(), "-json")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("verify with %s: %v\n%s", lib, err, stderr.String())
		}
		var v verifyResult
		if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("verify with %s: %w: %s", lib, err, stdout.String())
		}
		out = append(out, v)
	}
	return out, nil
}

func writeScaleReport(w io.Writer, o scaleOpts, res *scaleResult) {
	fmt.Fprintf(w, "grasp-bench scale: each server filled point by point; ingest figures are for the events added since the previous point\n")
	fmt.Fprintf(w, "machine: %s\n", res.Machine)
	fmt.Fprintf(w, "corpus: %d events (%d repositories), average event %.0f B of JSON; %d connections × %d in flight\n",
		res.Corpus.Events, res.Corpus.Repositories, res.Corpus.AvgEventBytes, o.conns, o.window)
	fmt.Fprint(w, baselineLine(o.commonOpts))
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprint(tw, "| events stored\t")
	for _, n := range res.Points {
		fmt.Fprintf(tw, "| %s\t", commas(int64(n)))
	}
	fmt.Fprintln(tw, "|")
	fmt.Fprint(tw, "|---\t")
	for range res.Points {
		fmt.Fprint(tw, "|--:\t")
	}
	fmt.Fprintln(tw, "|")
	var skipped []string
	for _, name := range []string{serverGrasp, serverLibsecp, serverPostgres, serverBaseline} {
		runs := res.Servers[name]
		if len(runs) == 0 {
			continue
		}
		var keys []metric
		seen := map[string]bool{}
		for _, pr := range runs {
			if pr.Skipped != "" && !slices.Contains(skipped, name+" "+pr.Skipped) {
				skipped = append(skipped, name+" "+pr.Skipped)
			}
			if pr.Run == nil {
				continue
			}
			for _, m := range pr.Run.Metrics {
				if !seen[m.Key] {
					seen[m.Key] = true
					keys = append(keys, m)
				}
			}
		}
		for _, k := range keys {
			label := name + ": " + k.Label
			if k.Key == "ingest_rate" {
				label = name + ": ingest"
			}
			fmt.Fprintf(tw, "| %s, %s\t", label, k.Unit)
			for _, n := range res.Points {
				cell := "—"
				for _, pr := range runs {
					if pr.Events == n && pr.Run != nil {
						if v, ok := pr.Run.get(k.Key); ok {
							cell = fmtNum(v)
						}
					} else if pr.Events == n && pr.Skipped != "" {
						cell = "skipped"
					}
				}
				fmt.Fprintf(tw, "| %s\t", cell)
			}
			fmt.Fprintln(tw, "|")
		}
	}
	tw.Flush()
	for _, s := range skipped {
		fmt.Fprintf(w, "\n%s", s)
	}
	if len(res.Verify) > 0 {
		fmt.Fprintf(w, "\n\nsignature verification ceiling (the same corpus events, id hash + Schnorr check):\n")
		for _, v := range res.Verify {
			fmt.Fprintf(w, "  %-22s %8s verifications/s on %d goroutines; %8s per CPU second → %s/s on %d cores\n",
				v.Library, fmtNum(v.Rate), v.Goroutines, fmtNum(v.PerCPU), fmtNum(v.PerCPU*float64(res.Machine.CPUs)), res.Machine.CPUs)
			if v.CheckRate > 0 {
				fmt.Fprintf(w, "  %-22s %8s verifications/s on %d goroutines; %8s per CPU second → %s/s on %d cores\n",
					v.CheckLibrary, fmtNum(v.CheckRate), v.Goroutines, fmtNum(v.CheckPerCPU), fmtNum(v.CheckPerCPU*float64(res.Machine.CPUs)), res.Machine.CPUs)
			}
		}
	}
	fmt.Fprint(w, ingestNotes)
}
