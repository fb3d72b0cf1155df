// Command grasp-bench reproduces grasp's performance figures (issue 15):
// it builds `grasp serve` and a bare khatru relay (internal/baseline) from
// this tree, runs each as its own process on a free 127.0.0.1 port with its
// data in a temporary directory, drives both with the same pre-signed NIP-34
// corpus, and prints each figure for both servers and as the ratio
// grasp ÷ baseline. Absolute numbers depend on the machine and its load;
// the ratios, measured in the same run, are what to compare.
//
//	grasp-bench [flags]          the table: ingest, RSS, bytes written, queries,
//	                             NIP-77, live fan-out, git clone; -rounds times
//	grasp-bench scale [flags]    the scale curve at -points store sizes
//	grasp-bench corpus [flags]   generate (and cache) a corpus, print its shape
//	grasp-bench verify [flags]   signature checks per second with this build's library
//	grasp-bench abuse [flags]    the security audits' memory and page attacks
//	                             (F05, F06, F07, F17, F29, F30): RSS, CPU and
//	                             a bystander's latency
//	grasp-bench neg [flags]      the NIP-77 figures of a scale point against a
//	                             running server that holds the corpus's first
//	                             -events events (e.g. a copy of a kept store)
//
// Every command takes -h. Pre-signed corpora are cached under -corpus-dir
// (signing a million events takes minutes; it is done once).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := "table"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "table":
		err = tableCmd(ctx, args, stdout, stderr)
	case "scale":
		err = scaleCmd(ctx, args, stdout, stderr)
	case "corpus":
		err = corpusCmd(args, stdout, stderr)
	case "verify":
		err = verifyCmd(args, stdout, stderr)
	case "abuse":
		err = abuseCmd(ctx, args, stdout, stderr)
	case "neg":
		err = negCmd(ctx, args, stdout, stderr)
	case "help":
		fmt.Fprintln(stdout, "usage: grasp-bench [table|scale|corpus|verify|abuse|neg] [flags]; each takes -h")
		return 0
	default:
		fmt.Fprintf(stderr, "grasp-bench: unknown command %q (table, scale, corpus, verify, abuse)\n", cmd)
		return 2
	}
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "grasp-bench: %v\n", err)
		return 1
	}
	return 0
}

// defaultCorpusDir is where pre-signed corpora are kept between runs.
func defaultCorpusDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "grasp-bench")
	}
	return filepath.Join(os.TempDir(), "grasp-bench")
}

func logger(w io.Writer) func(string, ...any) {
	return func(format string, args ...any) { fmt.Fprintf(w, "# "+format+"\n", args...) }
}

func corpusCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("corpus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("events", 20000, "events in the corpus")
	seed := fs.Uint64("seed", 1, "generator seed (same seed and size: same events)")
	dir := fs.String("corpus-dir", defaultCorpusDir(), "where corpora are cached")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := loadOrGenerate(*dir, *n, *seed, logger(stderr))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "corpus %s\n", corpusPath(*dir, *n, *seed))
	fmt.Fprintf(stdout, "events %d, repositories %d, average event JSON %.0f B\n", len(c.items), len(c.hdr.Repos), c.avgEventBytes())
	for _, v := range sortedKinds(c.kindCounts()) {
		fmt.Fprintf(stdout, "  kind %5d: %d\n", v[0], v[1])
	}
	return nil
}

func verifyCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("events", 20000, "corpus whose events are verified")
	seed := fs.Uint64("seed", 1, "corpus seed")
	dir := fs.String("corpus-dir", defaultCorpusDir(), "where corpora are cached")
	g := fs.Int("goroutines", 2, "goroutines verifying at once")
	secs := fs.Duration("for", 5*time.Second, "how long to measure")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Only the first few thousand events are verified: read no more.
	c, err := loadCorpusHead(corpusPath(*dir, *n, *seed), 4096)
	if err != nil {
		if c, err = loadOrGenerate(*dir, *n, *seed, logger(stderr)); err != nil {
			return err
		}
	}
	v, err := verifyRate(c, *g, *secs)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(v)
	}
	fmt.Fprintf(stdout, "%s: %.0f verifications/s on %d goroutines, %.0f per CPU second\n", v.Library, v.Rate, v.Goroutines, v.PerCPU)
	fmt.Fprintf(stdout, "%s: %.0f verifications/s on %d goroutines, %.0f per CPU second\n", v.CheckLibrary, v.CheckRate, v.Goroutines, v.CheckPerCPU)
	return nil
}
