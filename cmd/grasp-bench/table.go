package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// commonOpts are the flags the table and scale commands share.
type commonOpts struct {
	seed          uint64
	corpusDir     string
	conns, window int
	queries       int
	negRuns       int
	build         buildOpts
	baselineSync  bool
	baselineNeg   int
	jsonPath      string
	keep          bool
	legacyConfig  bool
}

func (o *commonOpts) register(fs *flag.FlagSet) {
	fs.Uint64Var(&o.seed, "seed", 1, "corpus generator seed")
	fs.StringVar(&o.corpusDir, "corpus-dir", defaultCorpusDir(), "where pre-signed corpora are cached")
	fs.IntVar(&o.conns, "conns", 4, "ingest: websocket connections")
	fs.IntVar(&o.window, "window", 64, "ingest: unanswered EVENTs allowed per connection")
	fs.IntVar(&o.queries, "queries", 100, "query: REQs of each kind")
	fs.IntVar(&o.negRuns, "neg-runs", 3, "negentropy: runs of each reconciliation (the median is reported)")
	fs.StringVar(&o.build.graspBin, "grasp-bin", "", "use this grasp binary instead of building ./cmd/grasp")
	fs.StringVar(&o.build.baselineBin, "baseline-bin", "", "use this baseline binary instead of building it")
	fs.BoolVar(&o.legacyConfig, "legacy-config", false, "with -grasp-bin of a build older than 2026-11: leave out the config keys it does not know")
	fs.Func("tags", "comma-separated build tags for grasp, e.g. libsecp256k1", func(v string) error {
		o.build.tags = strings.Split(v, ",")
		return nil
	})
	fs.BoolVar(&o.baselineSync, "baseline-sync", true, "baseline: badger SyncWrites (an OK means durable, as for grasp)")
	fs.IntVar(&o.baselineNeg, "baseline-neg-limit", 0, "baseline: badger MaxLimitNegentropy; 0 = grasp's negentropy_max_events (16777216 is eventstore's default)")
	fs.StringVar(&o.jsonPath, "json", "", "also write every figure as JSON to this file (- for stdout)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (data dirs, logs)")
}

// workDir makes the run's temporary directory; cleanup removes it unless
// -keep asked to keep it.
func (o commonOpts) workDir(prefix string, logf func(string, ...any)) (string, func(), error) {
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	if o.keep {
		logf("keeping %s", tmp)
		return tmp, func() {}, nil
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// prepare makes the run's temporary directory (cleanup removes it unless
// -keep) and loads or generates the corpus of n events, with its summary.
func (o commonOpts) prepare(prefix string, n int, logf func(string, ...any)) (tmp string, cleanup func(), c *corpus, sum corpusSummary, err error) {
	tmp, cleanup, err = o.workDir(prefix, logf)
	if err != nil {
		return "", nil, nil, sum, err
	}
	c, err = loadOrGenerate(o.corpusDir, n, o.seed, logf)
	if err != nil {
		cleanup()
		return "", nil, nil, sum, err
	}
	return tmp, cleanup, c, summarise(c, corpusPath(o.corpusDir, n, o.seed), min(n, len(c.items))), nil
}

// emit prints what was measured, also after a failure part-way, and
// writes it as JSON when asked.
func emit[T any](res *T, err error, print func(*T), jsonPath string) error {
	if res == nil {
		return err
	}
	print(res)
	if jsonPath != "" {
		if jerr := writeJSON(jsonPath, res); jerr != nil && err == nil {
			err = jerr
		}
	}
	return err
}

// tableOpts are the flags of the table command.
type tableOpts struct {
	commonOpts
	events       int
	rounds       int
	scenarios    map[string]bool
	fanout       fanoutOpts
	cloneCommits int
	clones       int
	settle       time.Duration
	profileDir   string
}

var allScenarios = []string{"ingest", "query", "negentropy", "fanout", "clone"}

func parseScenarios(s string) (map[string]bool, error) {
	out := map[string]bool{"ingest": true} // everything else needs the store filled
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if name == "all" {
			for _, n := range allScenarios {
				out[n] = true
			}
			continue
		}
		if !slices.Contains(allScenarios, name) {
			return nil, fmt.Errorf("unknown scenario %q (have %s, all)", name, strings.Join(allScenarios, ", "))
		}
		out[name] = true
	}
	return out, nil
}

func tableFlags(fs *flag.FlagSet, o *tableOpts) *string {
	o.register(fs)
	fs.IntVar(&o.events, "events", 20000, "events in the corpus")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds; each starts both servers afresh and the order alternates")
	scen := fs.String("scenarios", "all", "comma-separated: "+strings.Join(allScenarios, ",")+" (ingest always runs)")
	fs.IntVar(&o.fanout.Subs, "subs", 500, "fanout: live subscriptions")
	fs.IntVar(&o.fanout.Conns, "sub-conns", 10, "fanout: connections the subscriptions are spread over")
	fs.IntVar(&o.fanout.Events, "fanout-events", 200, "fanout: events published one at a time")
	fs.IntVar(&o.cloneCommits, "clone-commits", 3000, "clone: commits in the generated repository")
	fs.IntVar(&o.clones, "clones", 2, "clone: clones through each server (and as many native ones)")
	fs.DurationVar(&o.settle, "settle", 3*time.Second, "pause after ingest before the second write reading (background compaction)")
	fs.StringVar(&o.profileDir, "profile", "", "write CPU profiles of ingest, negentropy and fanout per server and round to this directory")
	return scen
}

func tableCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grasp-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o tableOpts
	scen := tableFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if o.scenarios, err = parseScenarios(*scen); err != nil {
		return err
	}
	if o.rounds < 1 || o.events < 100 || o.conns < 1 || o.window < 1 || o.fanout.Conns < 1 || o.fanout.Subs < o.fanout.Conns {
		return fmt.Errorf("need rounds >= 1, events >= 100, conns and window >= 1, subs >= sub-conns >= 1")
	}
	o.build.profile = o.profileDir != ""
	res, err := runTable(ctx, o, stderr)
	return emit(res, err, func(r *tableResult) { writeTableReport(stdout, o, r) }, o.jsonPath)
}

// tableResult is the whole output of the table command.
type tableResult struct {
	Machine   machine        `json:"machine"`
	Command   string         `json:"command"`
	Corpus    corpusSummary  `json:"corpus"`
	Settings  map[string]any `json:"settings"`
	Rounds    []roundResult  `json:"rounds"`
	CloneRepo map[string]any `json:"clone_repo,omitempty"`
}

type corpusSummary struct {
	Path          string         `json:"path"`
	Events        int            `json:"events"`
	Repositories  int            `json:"repositories"`
	AvgEventBytes float64        `json:"avg_event_bytes"`
	Kinds         map[string]int `json:"kinds"`
}

func summarise(c *corpus, path string, n int) corpusSummary {
	s := corpusSummary{Path: path, Events: n, Kinds: map[string]int{}}
	var bytes int64
	for _, it := range c.items[:n] {
		s.Kinds[fmt.Sprint(it.kind)]++
		bytes += int64(it.size)
		if it.kind == nip34.KindAnnouncement {
			s.Repositories++
		}
	}
	s.AvgEventBytes = float64(bytes) / float64(max(1, n))
	return s
}

func runTable(ctx context.Context, o tableOpts, stderr io.Writer) (*tableResult, error) {
	logf := logger(stderr)
	res := &tableResult{Machine: describeMachine(), Command: "grasp-bench " + strings.Join(os.Args[1:], " ")}
	tmp, cleanup, c, sum, err := o.prepare("grasp-bench-", o.events, logf)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res.Corpus = sum
	res.Settings = map[string]any{
		"conns": o.conns, "window": o.window, "queries_per_kind": o.queries, "neg_runs": o.negRuns,
		"fanout": o.fanout, "clone_commits": o.cloneCommits, "clones": o.clones, "settle": o.settle.String(),
		"baseline_sync_writes": o.baselineSync, "baseline_neg_limit": o.baselineNeg, "scenarios": o.scenarios, "grasp_tags": o.build.tags,
	}
	bins, err := prepareBinaries(ctx, o.build, tmp, logf)
	if err != nil {
		return res, err
	}
	var repo *cloneRepo
	if o.scenarios["clone"] {
		logf("generating a repository of %d commits", o.cloneCommits)
		if repo, err = makeCloneRepo(ctx, filepath.Join(tmp, "clone-src.git"), o.cloneCommits); err != nil {
			return res, err
		}
		res.CloneRepo = map[string]any{"commits": repo.commits, "pack_bytes": repo.packBytes}
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return res, err
		}
	}
	for r := 1; r <= o.rounds; r++ {
		order := []string{serverGrasp, serverBaseline}
		if r%2 == 0 {
			order = []string{serverBaseline, serverGrasp}
		}
		rr := roundResult{Round: r, Order: order, Servers: map[string]*serverRun{}}
		for _, name := range order {
			logf("round %d: %s", r, name)
			dir, err := os.MkdirTemp(tmp, name+"-")
			if err != nil {
				return res, err
			}
			run, err := runServerRound(ctx, name, bins, dir, c, repo, o, r, logf)
			if !o.keep {
				os.RemoveAll(dir)
			}
			if run != nil {
				rr.Servers[name] = run
			}
			if err != nil {
				rr.computeRatios()
				res.Rounds = append(res.Rounds, rr)
				return res, fmt.Errorf("round %d, %s: %w", r, name, err)
			}
		}
		rr.computeRatios()
		res.Rounds = append(res.Rounds, rr)
	}
	res.Machine.LoadAfter = loadAvg()
	return res, nil
}

// runServerRound starts one server afresh and runs every scenario on it.
func runServerRound(ctx context.Context, name string, bins binaries, dir string, c *corpus, repo *cloneRepo, o tableOpts, round int, logf func(string, ...any)) (*serverRun, error) {
	p, gitRoot, err := startServer(ctx, name, bins, dir, serverOpts{baselineSync: o.baselineSync, baselineNeg: o.baselineNeg, profile: o.profileDir != "", legacyConfig: o.legacyConfig})
	if err != nil {
		return nil, err
	}
	defer p.stop()
	run := &serverRun{Server: name, Detail: map[string]any{}}
	profiled := func(scenario string, f func() error) error {
		if o.profileDir != "" {
			if err := p.startProfile(filepath.Join(o.profileDir, fmt.Sprintf("%s-%s-r%d.pprof", scenario, name, round))); err != nil {
				return err
			}
		}
		err := f()
		if o.profileDir != "" {
			if perr := p.stopProfile(); perr != nil && err == nil {
				err = perr
			}
		}
		return err
	}

	// the repositories first (untimed), then their activity: ingest, RSS,
	// bytes written
	anns, states, activity := c.split(0, len(c.items))
	done := newDoneSet(len(c.items))
	pushRepo := filepath.Join(dir, "seed.git")
	if _, err := gitRun(ctx, "", "init", "-q", "--bare", pushRepo); err != nil {
		return nil, err
	}
	sr, err := seedRepos(ctx, p, name != serverBaseline, c, anns, states, done, pushRepo)
	if err != nil {
		return nil, fmt.Errorf("seed repositories: %w", err)
	}
	run.Detail["seed"] = sr
	before, err := sampleProc(p.pid())
	if err != nil {
		return nil, err
	}
	var ing ingestResult
	err = profiled("ingest", func() error {
		var err error
		ing, err = ingest(ctx, p.wsURL(), c, activity, done, o.conns, o.window, nil)
		return err
	})
	if err != nil {
		return run, fmt.Errorf("ingest: %w", err)
	}
	after, err := sampleProc(p.pid())
	if err != nil {
		return run, err
	}
	if ing.Rejected > 0 {
		return run, fmt.Errorf("ingest: %d events refused: %v", ing.Rejected, ing.Reasons)
	}
	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
		return run, ctx.Err()
	}
	settled, err := sampleProc(p.pid())
	if err != nil {
		return run, err
	}
	dirs, total := dirSizes(p.dataDir)
	n := float64(len(activity))
	run.add("ingest_rate", "ingest to durable OK", "events/s", ing.rate())
	run.add("ingest_ok_p50", "  OK latency p50", "ms", ms(percentile(ing.lats, 0.5)))
	run.add("ingest_ok_p99", "  OK latency p99", "ms", ms(percentile(ing.lats, 0.99)))
	run.add("ingest_cpu", "  server CPU per event", "µs", float64((after.cpu-before.cpu).Microseconds())/n)
	run.add("write_per_event", "bytes written per event, at the last OK", "B", float64(after.writeBytes-before.writeBytes)/n)
	run.add("write_per_event_settled", fmt.Sprintf("bytes written per event, %s later", o.settle), "B", float64(settled.writeBytes-before.writeBytes)/n)
	run.add("disk_per_event", "data directory size per event", "B", float64(total)/float64(len(c.items)))
	run.Detail["ingest"] = ing
	run.Detail["data_dir_bytes"] = dirs
	run.Detail["io_per_event"] = map[string]float64{
		"write_bytes":           float64(after.writeBytes-before.writeBytes) / n,
		"cancelled_write_bytes": float64(after.cancelled-before.cancelled) / n,
		"wchar":                 float64(after.wchar-before.wchar) / n,
	}
	run.Detail["rss_after_ingest_kib"] = after.hwmKB

	if err := p.alive(); err != nil {
		return run, err
	}
	if o.scenarios["query"] {
		logf("round %d: %s: queries", round, name)
		if err := measureQueries(ctx, p, c, len(c.items), o.queries, o.seed, run); err != nil {
			return run, err
		}
	}
	if o.scenarios["negentropy"] {
		logf("round %d: %s: negentropy", round, name)
		if err := profiled("negentropy", func() error {
			return measureNegentropy(ctx, p.wsURL(), p.pid(), c, len(c.items), o.negRuns, run)
		}); err != nil {
			return run, err
		}
	}
	if o.scenarios["fanout"] {
		logf("round %d: %s: fan-out", round, name)
		var fo fanoutResult
		cpu0, err := threadCPU(p.pid())
		if err != nil {
			return run, err
		}
		err = profiled("fanout", func() error {
			var err error
			fo, err = runFanout(ctx, p.wsURL(), c.hdr.Repos, o.fanout)
			return err
		})
		if err != nil {
			return run, fmt.Errorf("fanout: %w", err)
		}
		cpu1, err := threadCPU(p.pid())
		if err != nil {
			return run, err
		}
		label := fmt.Sprintf("live fan-out (%d subs on %d conns × %d events)", o.fanout.Subs, o.fanout.Conns, o.fanout.Events)
		run.add("fanout_p50", label+" p50", "ms", ms(fo.P50))
		run.add("fanout_p99", "  fan-out p99", "ms", ms(fo.P99))
		run.add("fanout_last_p50", "  publish → last subscriber p50", "ms", ms(fo.LastP50))
		run.add("fanout_cpu", "  server CPU per delivered copy (incl. subscribing)", "µs", float64((cpu1-cpu0).Microseconds())/float64(max(1, fo.Deliveries)))
		run.Detail["fanout"] = fo
	}
	if o.scenarios["clone"] && repo != nil {
		logf("round %d: %s: clone", round, name)
		var url string
		if name == serverBaseline {
			url, err = hostOnBaseline(ctx, p, gitRoot, repo)
		} else {
			url, err = hostOnGrasp(ctx, p, repo)
		}
		if err != nil {
			return run, fmt.Errorf("clone setup: %w", err)
		}
		cl, err := runClones(ctx, url, repo, o.clones, dir)
		if err != nil {
			return run, fmt.Errorf("clone: %w", err)
		}
		run.add("clone_ratio", "git clone through the server ÷ git clone --no-local", "", cl.ratio())
		run.add("clone_s", "  git clone through the server", "s", cl.Served.Seconds()/float64(cl.Clones))
		run.Detail["clone"] = cl
	}
	final, err := sampleProc(p.pid())
	if err != nil {
		return run, err
	}
	run.add("rss_peak", "server RSS peak (VmHWM)", "MiB", float64(final.hwmKB)/1024)
	return run, p.alive()
}

func writeTableReport(w io.Writer, o tableOpts, res *tableResult) {
	fmt.Fprintf(w, "grasp-bench: %d rounds (values: round 1 / round 2 ...), ratio = grasp ÷ baseline (same run)\n", len(res.Rounds))
	fmt.Fprintf(w, "machine: %s\n", res.Machine)
	fmt.Fprintf(w, "corpus: %d events (%d repositories), average event %.0f B of JSON; %d connections × %d in flight\n",
		res.Corpus.Events, res.Corpus.Repositories, res.Corpus.AvgEventBytes, o.conns, o.window)
	fmt.Fprint(w, baselineLine(o.commonOpts))
	writeTable(w, res.Rounds)
	fmt.Fprint(w, ingestNotes)
}

const ingestNotes = `
ingest: the corpus's issues, patches, comments and statuses; the repositories they belong to
  (announcements, states and, on grasp, a push of the commit each state names) are created
  before and not counted.
bytes written: /proc/<pid>/io write_bytes of the server process over the ingest (with the
  children it reaped, i.e. git) ÷ events: event store, indexes, value log, WAL, side tables;
  logs go to a pipe and are not counted. Both stores write through badger's memory-mapped
  memtable (write(2) carries ~84 B per event), so write_bytes counts the pages, or whole large
  folios, dirtied again after every sync: with one sync per event (the baseline) it swings
  between runs; the data directory size is the steadier comparison.
server CPU: utime+stime (with reaped children) over the ingest ÷ events; per REQ, per
  reconciliation and per fan-out copy from the threads' schedstat. Steadier than wall-clock
  figures when other processes share the cores.
`

func baselineLine(o commonOpts) string {
	neg := "= grasp's negentropy_max_events"
	if o.baselineNeg > 0 {
		neg = commas(int64(o.baselineNeg))
	}
	return fmt.Sprintf("baseline: khatru v0.19.1 + eventstore badger, default options but SyncWrites=%v and MaxLimitNegentropy %s; git http-backend over CGI\n\n", o.baselineSync, neg)
}
