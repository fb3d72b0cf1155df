// Command grasp runs a GRASP server: a Nostr relay for NIP-34 git events and a
// git smart-HTTP host whose pushes are authorised by signed state events.
//
//	grasp serve [--config grasp.toml]          run the server
//	grasp check-config [--config grasp.toml]   validate config and plugins, then exit
//	grasp plugin test --config grasp.toml      run a plugin chain over JSON lines on stdin
//	grasp admin status [--config grasp.toml]    ask the running server for its status
//	grasp admin integrity-check [--repair]       check (and realign) hosted repos against their states
//	grasp admin backup [--offline] DEST          write a consistent backup of the data dir into DEST
//	grasp admin backup --verify DEST             check a backup by restoring it into a scratch dir
//	grasp admin restore SRC DATA_DIR             fill an empty data dir from a backup
//	grasp scripts export DIR                   write the embedded stock plugins into DIR
//	grasp token --key KEY --url URL            print a NIP-98 token for a private repository (GRASP-08)
//	grasp version                              print version and commit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/logging"
	"github.com/grasp-dev/grasp/core/metrics"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/plugins"
	"github.com/hashicorp/go-hclog"
)

// Set with -ldflags "-X main.version=... -X main.commit=..."; otherwise
// metrics.BuildIdentity takes them from the module's build information.
var (
	version = ""
	commit  = ""
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  grasp serve [--config FILE]          run the server (no FILE: built-in defaults)
  grasp check-config [--config FILE]   validate the config and its plugins
  grasp plugin test --config FILE [--hook accept|relay_selection|throttle]
                                       run one plugin chain over JSON lines on stdin, one result per line
  grasp admin status [--config FILE]   what the running server holds: repos, purgatory, sync relays, hunter
  grasp admin integrity-check [--config FILE] [--repair] [--repo 30617:HEX:D]
                                       every repo's refs against its signed state, alternates, announcements
  grasp admin backup [--config FILE] [--offline] DEST
                                       a consistent backup of the data dir into DEST (new or empty), taken by
                                       the running server while it serves; --offline: the server is stopped
  grasp admin backup [--config FILE] --verify DEST
                                       check backup DEST: file hashes, a restore into a scratch dir, every
                                       event's id and signature, the refs, git fsck; exit 1 on a problem
  grasp admin restore [--config FILE] SRC DATA_DIR
                                       fill DATA_DIR (new or empty; never a running server's) from backup SRC
` + nip86Usage + `  grasp scripts export DIR             write the stock plugins (scripts/*.js) into DIR
  grasp token [--key KEY|@FILE] --url URL [--method M] [--format header|git|password]
                                       a NIP-98 token for a private repository (GRASP-08), valid 60 s:
                                       git -c "$(grasp token --key @key --url URL --format git)" clone URL
  grasp version                        print version and commit
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// `grasp serve --help` (any command's): the usage, on stdout, exit 0.
	if slices.ContainsFunc(args[1:], isHelpFlag) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "check-config":
		return checkConfig(args[1:], stdout, stderr)
	case "plugin":
		if len(args) < 2 || args[1] != "test" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return pluginTest(args[2:], stdin, stdout, stderr)
	case "admin":
		switch {
		case len(args) >= 2 && args[1] == "status":
			return adminStatus(args[2:], stdout, stderr)
		case len(args) >= 2 && args[1] == "integrity-check":
			return adminIntegrity(args[2:], stdout, stderr)
		case len(args) >= 2 && args[1] == "backup":
			return adminBackup(args[2:], stdout, stderr)
		case len(args) >= 2 && args[1] == "restore":
			return adminRestore(args[2:], stdout, stderr)
		case len(args) >= 2 && isNIP86Verb(args[1]):
			return adminNIP86(args[1], args[2:], stdout, stderr)
		}
		fmt.Fprint(stderr, usage)
		return 2
	case "token":
		return tokenCmd(args[1:], stdout, stderr)
	case "scripts":
		if len(args) != 3 || args[1] != "export" {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return exportScripts(args[2], stdout, stderr)
	case "version", "--version", "-v":
		v, c := metrics.BuildIdentity(version, commit)
		fmt.Fprintf(stdout, "grasp %s (commit %s)\n", v, c)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "grasp: unknown command %q\n%s", args[0], usage)
	return 2
}

// isHelpFlag reports whether a is the flag package's request for help.
func isHelpFlag(a string) bool {
	switch a {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

// loadConfig parses --config (if any) from args.
func loadConfig(name string, args []string, stderr io.Writer) (config.Config, string, bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path to grasp.toml (default: built-in defaults)")
	if err := fs.Parse(args); err != nil {
		return config.Config{}, "", false
	}
	cfg, err := loadConfigFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return config.Config{}, *path, false
	}
	return cfg, *path, true
}

// loadConfigFile loads path, or the built-in defaults when it is "", with
// its paths made absolute once, here, for every command.
func loadConfigFile(path string) (config.Config, error) {
	cfg := config.Default()
	if path != "" {
		var err error
		if cfg, err = config.Load(path); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.Absolute()
}

// serve is the table of contents of a running grasp: load the config, open
// the store, build the plugins, build the server, serve until a signal.
func serve(args []string, stderr io.Writer) int {
	cfg, path, ok := loadConfig("serve", args, stderr)
	if !ok {
		return 1
	}
	log, err := startLogging(cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "grasp: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	v, c := metrics.BuildIdentity(version, commit)
	logStart(log, cfg, path, v, c)
	reg := metrics.New(v, c)
	e := env.Env{Clock: clock.New(), Log: log, Metrics: reg.Registerer()}
	st, err := server.OpenStore(cfg, e)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	host, ext, err := buildPlugins(cfg, st.Events(), e)
	if err != nil {
		st.Close()
		log.Error("cannot load plugins", "error", err)
		return 1
	}
	srv, err := server.New(server.Options{Config: cfg, Build: server.Build{Version: v, Commit: c}, Metrics: reg, Store: st, Extensions: ext}, e)
	if err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	if host != nil {
		host.OnReload(srv.ThrottleChanged)
	}
	reloadOnSignal(ctx, cfg, path, host, srv, st.Events(), e)
	if err := srv.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("server stopped", "error", err)
		return 1
	}
	return 0
}

// logStart says which build runs with which config, and warns about the
// settings check-config warns about (config.Warnings).
func logStart(log hclog.Logger, cfg config.Config, path, v, c string) {
	if path == "" {
		path = "built-in defaults"
	}
	log.Info("grasp starting", "version", v, "commit", c, "config", path)
	if c == "unknown" {
		log.Info("this build names no commit: it was built without version control information (-buildvcs=false, " +
			"or go run outside a grasp checkout) and without release stamps; release builds (tools/release.sh) carry both")
	}
	for _, w := range cfg.Warnings() {
		log.Warn(w.Msg, "key", w.Key)
	}
}

// startLogging builds the root logger from [log]; libraries that print
// through the standard logger (eventstore's badger migrations) go through it
// too, in the configured format.
func startLogging(cfg config.Config, stderr io.Writer) (hclog.Logger, error) {
	log, err := logging.New(cfg.Log.Level, cfg.Log.Format, stderr)
	if err != nil {
		return nil, err
	}
	stdlog.SetFlags(0)
	stdlog.SetOutput(log.Named("lib").StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}))
	if cfg.Server.MemoryLimitMB > 0 {
		debug.SetMemoryLimit(int64(cfg.Server.MemoryLimitMB) << 20)
	}
	return log, nil
}

func checkConfig(args []string, stdout, stderr io.Writer) int {
	cfg, path, ok := loadConfig("check-config", args, stderr)
	if !ok {
		return 1
	}
	if err := checkStockConfigs(cfg, path); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	if err := checkPlugins(cfg); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	if path == "" {
		path = "built-in defaults"
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stderr, "%s: warning: %s\n", path, w)
	}
	fmt.Fprintf(stdout, "%s: ok\n", path)
	return 0
}

// pluginTest runs one plugin chain over stdin. Exit status: 0 when every
// line parsed and no plugin failed, 1 otherwise (or when there is nothing to
// test), 2 for a usage error.
func pluginTest(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path to grasp.toml")
	hook := fs.String("hook", "accept", "chain to run: accept, relay_selection or throttle")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	kind := plugins.Kind(*hook)
	switch kind {
	case plugins.KindAccept, plugins.KindRelaySelection, plugins.KindThrottle:
	default:
		fmt.Fprintf(stderr, "grasp plugin test: --hook must be accept, relay_selection or throttle, not %q\n", *hook)
		return 2
	}
	cfg, err := loadConfigFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	return testPlugins(context.Background(), cfg, kind, stdin, stdout, stderr)
}
