package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Server names, as they appear in the output.
const (
	serverGrasp    = "grasp"
	serverLibsecp  = "grasp-libsecp256k1"
	serverPostgres = "grasp-postgres"
	serverBaseline = "baseline"
)

// binaries are the server executables of one run.
type binaries struct {
	grasp    string
	libsecp  string // "" unless the scale curve asks for it
	baseline string
	// postgresURL is the database grasp-postgres (grasp's binary with
	// store.backend "postgres") uses.
	postgresURL string
}

// buildOpts say what to build and where.
type buildOpts struct {
	graspBin    string // prebuilt grasp; "" builds ./cmd/grasp
	baselineBin string // prebuilt baseline; "" builds ./cmd/grasp-bench/internal/baseline
	tags        []string
	profile     bool // build grasp with the benchprofile tag
	libsecp     bool // also build grasp with -tags libsecp256k1
	noBaseline  bool // grasp alone: neither build nor use the baseline
}

// prepareBinaries builds what was not given, from the module the command
// runs in, into dir.
func prepareBinaries(ctx context.Context, o buildOpts, dir string, logf func(string, ...any)) (binaries, error) {
	b := binaries{grasp: o.graspBin, baseline: o.baselineBin}
	need := b.grasp == "" || (b.baseline == "" && !o.noBaseline) || o.libsecp
	if !need {
		return b, nil
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return b, err
	}
	tags := append([]string(nil), o.tags...)
	if o.profile {
		tags = append(tags, "benchprofile")
	}
	if b.grasp == "" {
		b.grasp = filepath.Join(dir, "grasp")
		logf("building grasp (tags %v)", tags)
		if err := goBuild(ctx, root, "./cmd/grasp", b.grasp, tags); err != nil {
			return b, err
		}
	}
	if o.libsecp {
		b.libsecp = filepath.Join(dir, "grasp-libsecp256k1")
		logf("building grasp with -tags libsecp256k1")
		if err := goBuild(ctx, root, "./cmd/grasp", b.libsecp, append(tags, "libsecp256k1")); err != nil {
			return b, err
		}
	}
	if b.baseline == "" && !o.noBaseline {
		b.baseline = filepath.Join(dir, "baseline")
		logf("building the baseline relay")
		if err := goBuild(ctx, root, "./cmd/grasp-bench/internal/baseline", b.baseline, nil); err != nil {
			return b, err
		}
	}
	return b, nil
}

// serverOpts configure one server process.
type serverOpts struct {
	// negentropyMax is the most events one NIP-77 session covers: grasp's
	// relay.limits.negentropy_max_events, the baseline's
	// MaxLimitNegentropy. 0 keeps grasp's default (1,000,000) and gives the
	// baseline the same.
	negentropyMax int
	baselineNeg   int  // baseline: MaxLimitNegentropy instead of negentropyMax, if > 0
	baselineSync  bool // baseline: badger SyncWrites
	profile       bool
	// legacyConfig leaves out keys that builds older than the audit's
	// fixes (before 2026-11) do not know, for -grasp-bin runs of them.
	legacyConfig bool
	// perAddressCaps keeps the per-address connection cap at its default
	// (the abuse command measures what one address can do).
	perAddressCaps bool
	// gitDir is grasp's server.git_dir when set (several instances on one
	// PostgreSQL share one).
	gitDir string
	// extraTOML is appended to grasp's configuration (tables of its own,
	// e.g. the abuse command's [grasp] for F20).
	extraTOML string
	// memoryLimitMB is grasp's server.memory_limit_mb when > 0.
	memoryLimitMB int
}

// startServer starts the named server with its data under dir. For the
// baseline it also returns the directory its git http-backend serves.
func startServer(ctx context.Context, name string, bins binaries, dir string, o serverOpts) (*proc, string, error) {
	data := filepath.Join(dir, "data")
	logPath := filepath.Join(dir, name+".log")
	switch name {
	case serverGrasp, serverLibsecp, serverPostgres:
		bin := bins.grasp
		if name == serverLibsecp {
			bin = bins.libsecp
		}
		cfg := filepath.Join(dir, "grasp.toml")
		body := graspTOML(name, bins, data, o)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			return nil, "", err
		}
		var env []string
		if o.profile {
			env = append(env, "GRASP_PROFILE_LISTEN=127.0.0.1:0")
		}
		p, err := startProc(ctx, name, bin, []string{"serve", "--config", cfg}, env, data, logPath)
		return p, "", err
	case serverBaseline:
		gitRoot := filepath.Join(dir, "git")
		if err := os.MkdirAll(gitRoot, 0o755); err != nil {
			return nil, "", err
		}
		negLimit := o.negentropyMax
		if negLimit == 0 {
			negLimit = 1_000_000
		}
		if o.baselineNeg > 0 {
			negLimit = o.baselineNeg
		}
		args := []string{"-listen", "127.0.0.1:0", "-dir", data, "-git-root", gitRoot, "-sync=" + strconv.FormatBool(o.baselineSync),
			"-neg-limit", strconv.Itoa(negLimit)}
		if o.profile {
			args = append(args, "-profile", "127.0.0.1:0")
		}
		p, err := startProc(ctx, name, bins.baseline, args, nil, data, logPath)
		return p, gitRoot, err
	}
	return nil, "", fmt.Errorf("unknown server %q", name)
}

// graspTOML is the configuration a benchmark gives grasp (the named
// variant) with its data under data.
func graspTOML(name string, bins binaries, data string, o serverOpts) string {
	// Defaults except what a benchmark needs: a free port, the public
	// URL the corpus was signed for, metrics off, JSON logs (the address
	// is read from them) and, past a million events, a NIP-77 limit that
	// covers the whole store. Every client of the benchmark comes from
	// 127.0.0.1, so the per-address limits (purgatory quotas, connection
	// cap) are raised to the relay-wide ones: they are there against one
	// abusive address, which the benchmark is not, and would refuse the
	// seeding of 50+ repositories and the 101 fan-out connections
	// (except for the abuse command, which measures that cap). Builds
	// older than those limits get none of these keys (legacyConfig).
	body := fmt.Sprintf("[server]\nlisten = \"127.0.0.1:0\"\npublic_url = %q\ndata_dir = %q\n", benchPublicURL, data)
	if o.gitDir != "" {
		body += fmt.Sprintf("git_dir = %q\n", o.gitDir)
	}
	if o.memoryLimitMB > 0 {
		body += "memory_limit_mb = " + strconv.Itoa(o.memoryLimitMB) + "\n"
	}
	body += "\n[metrics]\nenabled = false\n\n[log]\nlevel = \"info\"\nformat = \"json\"\n"
	limits := "\n[relay.limits]\n"
	if !o.legacyConfig {
		body += "\n[purgatory]\nmax_held_per_ip = 20000\nmax_held_announcements_per_ip = 5000\n" +
			"max_held_announcements_per_pubkey = 5000\nmax_held_announcements_per_identifier = 5000\n"
		if !o.perAddressCaps {
			limits += "max_connections_per_ip = 10000\n"
		}
	}
	if name == serverPostgres {
		body += fmt.Sprintf("\n[store]\nbackend = \"postgres\"\npostgres_url = %q\npostgres_instances = 1\n", bins.postgresURL)
	}
	body += limits
	if o.negentropyMax > 0 {
		body += "negentropy_max_events = " + strconv.Itoa(o.negentropyMax) + "\n"
	}
	body += o.extraTOML
	return body
}
