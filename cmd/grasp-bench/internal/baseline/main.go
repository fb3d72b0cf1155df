// Command baseline is the reference server grasp-bench measures grasp
// against, built from this tree in the same run: a bare khatru v0.19.1 relay
// wired as khatru's README wires it, on eventstore's badger backend with
// badger's default options (except SyncWrites, on by default here so that an
// OK means the event is on disk, as it does for grasp), NIP-77 enabled, and
// `git http-backend` behind Go's CGI handler for the clone comparison.
//
// One setting departs from eventstore's defaults, because it decides what
// NIP-77 costs: MaxLimitNegentropy, the most events a negentropy query
// returns, is -neg-limit (1,000,000, grasp's default
// relay.limits.negentropy_max_events). eventstore's own default,
// 16,777,216, makes every NEG-OPEN preallocate result slices for that many
// events (~800 MB); MaxLimit = 1000, which other test relays set, silently
// cuts reconciliation to the newest 1000 events. -neg-limit 0 restores the
// library default.
//
// It adds nothing of grasp's: no policy, no limits, no purgatory. It must
// stay that plain, or the ratios stop meaning "grasp ÷ the framework it is
// built on".
//
//	baseline -listen 127.0.0.1:0 -dir DATA [-git-root DIR] [-sync=true] [-neg-limit N] [-profile 127.0.0.1:0]
//
// It prints "listening <host:port>" on stdout once it serves, and stops
// cleanly on SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	dgbadger "github.com/dgraph-io/badger/v4"
	"github.com/fiatjaf/eventstore/badger"
	"github.com/fiatjaf/khatru"
	"github.com/grasp-dev/grasp/core/profiling"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	dir := flag.String("dir", "", "badger data directory (required)")
	gitRoot := flag.String("git-root", "", "serve the bare repositories under this directory with git http-backend")
	syncWrites := flag.Bool("sync", true, "badger SyncWrites: an OK means the event is on disk")
	negLimit := flag.Int("neg-limit", 1_000_000, "badger MaxLimitNegentropy: most events one NIP-77 session covers (0: eventstore's default)")
	profile := flag.String("profile", "", "serve the CPU-profile switch on this loopback address")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "baseline: -dir is required")
		os.Exit(2)
	}
	if err := run(*listen, *dir, *gitRoot, *syncWrites, *negLimit, *profile); err != nil {
		fmt.Fprintf(os.Stderr, "baseline: %v\n", err)
		os.Exit(1)
	}
}

func run(listen, dir, gitRoot string, syncWrites bool, negLimit int, profile string) error {
	db := &badger.BadgerBackend{
		Path:               dir,
		MaxLimitNegentropy: negLimit, // with MaxLimit unset, Init keeps it (0: its default)
		BadgerOptionsModifier: func(o dgbadger.Options) dgbadger.Options {
			return o.WithSyncWrites(syncWrites).WithLogger(nil)
		},
	}
	if err := db.Init(); err != nil {
		return fmt.Errorf("open badger: %w", err)
	}
	defer db.Close()

	rl := khatru.NewRelay()
	rl.Log = log.New(io.Discard, "", 0)
	rl.Negentropy = true
	rl.StoreEvent = append(rl.StoreEvent, db.SaveEvent)
	rl.QueryEvents = append(rl.QueryEvents, db.QueryEvents)
	rl.CountEvents = append(rl.CountEvents, db.CountEvents)
	rl.DeleteEvent = append(rl.DeleteEvent, db.DeleteEvent)
	rl.ReplaceEvent = append(rl.ReplaceEvent, db.ReplaceEvent)

	var handler http.Handler = rl
	if gitRoot != "" {
		gitPath, err := exec.LookPath("git")
		if err != nil {
			return err
		}
		backend := &cgi.Handler{
			Path: gitPath,
			Args: []string{"http-backend"},
			Env:  []string{"GIT_PROJECT_ROOT=" + gitRoot, "GIT_HTTP_EXPORT_ALL=1"},
		}
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, ".git/") {
				backend.ServeHTTP(w, r)
				return
			}
			rl.ServeHTTP(w, r)
		})
	}
	if profile != "" {
		addr, err := profiling.Listen(profile)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "profiling listening %s\n", addr)
	}

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// Our own server, not rl.Start: Start sets 2 s read/write timeouts that
	// would cut long clones short.
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Printf("listening %s\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	srv.Close()
	return nil
}
