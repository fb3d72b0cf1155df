package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"text/tabwriter"
	"time"
)

// negCmd runs the NIP-77 measurements of a scale point (measureNegentropy)
// against a server that is already running and holds the first -events
// corpus events: a copy of a scale run's kept data directory served by
// `grasp serve`, so a change to the NIP-77 path can be measured at a
// million events without refilling a store (issue 27 part 3).
func negCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("grasp-bench neg", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "the running server's websocket URL (ws://127.0.0.1:PORT)")
	pid := fs.Int("pid", 0, "its process id: its CPU per reconciliation is read from /proc")
	events := fs.Int("events", 0, "how many of the corpus's first events it holds (exactly those)")
	corpusEvents := fs.Int("corpus-events", 0, "the cached corpus they come from; 0 = -events")
	runs := fs.Int("neg-runs", 3, "runs of each reconciliation (the median is reported)")
	seed := fs.Uint64("seed", 1, "corpus generator seed")
	corpusDir := fs.String("corpus-dir", defaultCorpusDir(), "where pre-signed corpora are cached")
	jsonPath := fs.String("json", "", "also write every figure as JSON to this file (- for stdout)")
	small := fs.Bool("small-frames", false, "the client sends frames of at most 60,000 bytes only (catchup.Options.FrameLimit), as before large frames")
	frameBytes := fs.Int("frame-bytes", 0, "the client's large frame limit (catchup.Options.LargeFrameLimit); 0 = its default")
	cpuProfile := fs.String("cpuprofile", "", "write the client's CPU profile (corpus loading excluded) to this file")
	serverProfile := fs.String("server-profile", "", "the server's CPU-profile switch (host:port a -tags benchprofile grasp names on stderr): profile it during the runs")
	serverProfileFile := fs.String("server-cpuprofile", "server.prof", "where the server writes that profile (a path it can write)")
	only := fs.String("only", "", "run only this reconciliation (neg_99, neg_insync, neg_repo_90, neg_repo_insync)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *pid <= 0 || *events <= 0 {
		return fmt.Errorf("neg needs -url, -pid and -events")
	}
	if *frameBytes > 0 {
		negLargeFrames = *frameBytes
	}
	if *small {
		negLargeFrames = -1
	}
	negOnly = *only
	logf := logger(stderr)
	c, err := loadOrGenerate(*corpusDir, max(*events, *corpusEvents), *seed, logf)
	if err != nil {
		return err
	}
	if *events > len(c.items) {
		return fmt.Errorf("-events %d: the corpus has %d", *events, len(c.items))
	}
	run := &serverRun{Server: serverGrasp, Detail: map[string]any{}}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *serverProfile != "" {
		sp := &proc{name: "server", profile: *serverProfile}
		abs, err := filepath.Abs(*serverProfileFile)
		if err != nil {
			return err
		}
		if err := sp.startProfile(abs); err != nil {
			return err
		}
		defer func() {
			if err := sp.stopProfile(); err != nil {
				logf("%v", err)
			}
		}()
	}
	t := time.Now()
	err = measureNegentropy(ctx, *url, *pid, c, *events, *runs, run)
	logf("NIP-77 runs at %s events took %s", commas(int64(*events)), time.Since(t).Round(time.Millisecond))
	return emit(run, err, func(r *serverRun) {
		tw := tabwriter.NewWriter(stdout, 0, 0, 1, ' ', 0)
		fmt.Fprintf(tw, "| at %s events\t| \t|\n|---\t|--:\t|\n", commas(int64(*events)))
		for _, m := range r.Metrics {
			fmt.Fprintf(tw, "| %s, %s\t| %s\t|\n", m.Label, m.Unit, fmtNum(m.Value))
		}
		tw.Flush()
	}, *jsonPath)
}
