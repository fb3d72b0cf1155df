package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/logging"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/core/store"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
)

// parseInterspersed parses fs's flags wherever they stand among the
// positional arguments (grasp admin backup DEST --config FILE).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// adminBackup writes a consistent backup of the data dir into DEST (missing
// or empty): by default taken by the running server while it serves, with
// --offline read from the data dir of a stopped server.
func adminBackup(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("admin backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path to grasp.toml")
	offline := fs.Bool("offline", false, "the server is stopped: read the data dir directly")
	verify := fs.Bool("verify", false, "check the backup DEST instead of writing one: hashes, a restore into a scratch dir, events, refs, git fsck")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 || *verify && *offline {
		fmt.Fprintln(stderr, "usage: grasp admin backup [--config FILE] [--offline] DEST\n       grasp admin backup [--config FILE] --verify DEST")
		return 2
	}
	cfg, err := loadConfigFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	if *verify {
		return verifyBackup(cfg, pos[0], stdout, stderr)
	}
	dest, err := filepath.Abs(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin backup: %v\n", err)
		return 1
	}
	if data, err := filepath.Abs(cfg.Server.DataDir); err == nil {
		if rel, err := filepath.Rel(data, dest); err == nil && filepath.IsLocal(rel) || dest == data {
			fmt.Fprintf(stderr, "grasp admin backup: %s is inside the data dir %s\n", dest, data)
			return 1
		}
	}
	if err := admin.EmptyDir(dest); err != nil {
		fmt.Fprintf(stderr, "grasp admin backup: %v: back up into a new or empty directory\n", err)
		return 1
	}
	_, statErr := os.Stat(dest)
	existed := statErr == nil
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var m admin.Manifest
	if *offline {
		// The server is stopped: this command writes the log lines it
		// would have (online, the server writes them).
		log := cliLog(cfg, stderr).Named("admin")
		log.Info("backup started", "data_dir", cfg.Server.DataDir, "online", false, "to", dest)
		m, err = backupOffline(ctx, cfg, dest)
		if err == nil {
			log.Info("backup finished", "repositories", m.Repositories, "store_bytes", m.StoreBytes, "to", dest)
		} else {
			log.Error("backup failed", "to", dest, "error", err)
		}
	} else {
		m, err = backupOnline(ctx, cfg, dest)
	}
	if err != nil {
		// Everything in dest is this run's: it was missing or empty.
		if existed {
			ents, _ := os.ReadDir(dest)
			for _, e := range ents {
				os.RemoveAll(filepath.Join(dest, e.Name()))
			}
		} else {
			os.RemoveAll(dest)
		}
		fmt.Fprintf(stderr, "grasp admin backup: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "backup of %s written to %s: %d repositories, store dump %d bytes\n", m.DataDir, dest, m.Repositories, m.StoreBytes)
	if m.Backend == store.BackendPostgres {
		fmt.Fprintln(stdout, "store.backend is postgres: the events are in PostgreSQL, back them up with pg_dump")
	}
	return 0
}

func backupOnline(ctx context.Context, cfg config.Config, dest string) (admin.Manifest, error) {
	req, err := adminRequest(ctx, cfg, http.MethodPost, admin.BackupPath, nil)
	if err != nil {
		return admin.Manifest{}, fmt.Errorf("%w (or stop the server and use --offline)", err)
	}
	u := req.URL
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return admin.Manifest{}, fmt.Errorf("is the server running? (with it stopped use --offline) %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return admin.Manifest{}, fmt.Errorf("%s: %s %s", u.Path, resp.Status, b)
	}
	return admin.ReceiveBackup(resp.Body, dest)
}

func backupOffline(ctx context.Context, cfg config.Config, dest string) (admin.Manifest, error) {
	data, err := filepath.Abs(cfg.Server.DataDir)
	if err != nil {
		return admin.Manifest{}, err
	}
	e := env.Env{}.OrDefaults()
	e.Log = e.Log.Named("backup")
	// With postgres there is no local store: the data dir holds files only.
	dump := func(io.Writer) error { return nil }
	if cfg.Store.Backend != store.BackendPostgres {
		if _, err := os.Stat(filepath.Join(data, "store")); err != nil {
			return admin.Manifest{}, fmt.Errorf("%s is not a grasp data dir: %w", data, err)
		}
		opts := server.StoreOptions(cfg)
		opts.Dir = data
		// Opened first: it fails while a server runs, and keeps one from
		// starting until the backup is done.
		st, err := store.OpenClosed(opts, e)
		if err != nil {
			return admin.Manifest{}, err
		}
		defer st.Close()
		dump = st.Backup
	}
	repos, err := git.NewRepos(git.RepoOptions{Root: filepath.Join(data, "git")}, e)
	if err != nil {
		return admin.Manifest{}, err
	}
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		pw.CloseWithError(admin.WriteBackup(ctx, pw, admin.BackupSources{
			DataDir: data, Backend: cfg.Store.Backend, Repos: repos.EachLocked, Refs: repos.RefsIn, Store: dump,
			Leave: []string{cfg.AdminToken()},
		}))
	}()
	m, err := admin.ReceiveBackup(pr, dest)
	pr.CloseWithError(errors.New("backup: receiver stopped"))
	<-written // before the store closes under it
	return m, err
}

// verifyBackup checks the backup directory src (admin.Verify): exit 0 when
// it would restore whole, 1 when not.
func verifyBackup(cfg config.Config, src string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := env.Env{}.OrDefaults()
	e.Log = e.Log.Named("verify")
	opts := server.StoreOptions(cfg)
	var repos *git.Repos
	repoTool := func(dir string) (*git.Repos, error) {
		if repos != nil {
			return repos, nil
		}
		// The restored data dir's git root: dir is <root>/<npub>/<d>.git.
		var err error
		repos, err = git.NewRepos(git.RepoOptions{Root: filepath.Dir(filepath.Dir(dir))}, e)
		return repos, err
	}
	tools := admin.VerifyTools{
		Load: func(dataDir string, r io.Reader) error {
			o := opts
			o.Dir = dataDir
			return store.Restore(o, e, r)
		},
		Refs: func(ctx context.Context, dir string) (map[string]string, error) {
			r, err := repoTool(dir)
			if err != nil {
				return nil, err
			}
			return r.RefsIn(ctx, dir)
		},
		Fsck: func(ctx context.Context, dir string) error {
			r, err := repoTool(dir)
			if err != nil {
				return err
			}
			return r.Fsck(ctx, dir)
		},
	}
	if m, err := admin.ReadManifest(src); err == nil && m.Backend != store.BackendPostgres {
		tools.Query = func(ctx context.Context, dataDir string, fn func(q func(context.Context, nostr.Filter) (chan *nostr.Event, error)) error) error {
			o := opts
			o.Dir, o.Backend = dataDir, store.BackendBadger
			// Verify reads every event, a page at a time.
			o.Limits.MaxLimit = 1 << 30
			st, err := store.New(o, e)
			if err != nil {
				return err
			}
			defer st.Close()
			return fn(st.Events().QueryEvents)
		}
	}
	rep, err := admin.Verify(ctx, src, tools)
	if err != nil {
		fmt.Fprintf(stderr, "grasp admin backup --verify: %v\n", err)
		return 1
	}
	if !rep.Write(stdout, src) {
		return 1
	}
	return 0
}

// adminRestore fills DATA_DIR (missing or empty) from a backup directory.
func adminRestore(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("admin restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path to grasp.toml (its [store] tuning opens the new store)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		fmt.Fprintln(stderr, "usage: grasp admin restore [--config FILE] SRC DATA_DIR")
		return 2
	}
	cfg, err := loadConfigFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	src, err1 := filepath.Abs(pos[0])
	data, err2 := filepath.Abs(pos[1])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(stderr, "grasp admin restore: %v\n", err)
		return 1
	}
	opts := server.StoreOptions(cfg)
	opts.Dir = data
	e := env.Env{}.OrDefaults()
	e.Log = e.Log.Named("restore")
	log := cliLog(cfg, stderr).Named("admin")
	log.Info("restore started", "from", src, "data_dir", data)
	m, err := admin.Restore(src, data, func(r io.Reader) error { return store.Restore(opts, e, r) })
	if err != nil {
		log.Error("restore failed", "from", src, "data_dir", data, "error", err)
		fmt.Fprintf(stderr, "grasp admin restore: %v\n", err)
		return 1
	}
	log.Info("restore finished", "from", src, "data_dir", data, "repositories", m.Repositories)
	fmt.Fprintf(stdout, "restored %s (backup of %s taken %s) into %s: %d repositories\n",
		src, m.DataDir, m.Created.Format("2006-01-02 15:04:05 MST"), data, m.Repositories)
	if m.Backend == store.BackendPostgres {
		fmt.Fprintln(stdout, "the backup was taken with store.backend = postgres: restore the events into PostgreSQL with pg_restore")
	}
	return 0
}

// cliLog is the [log] logger of an admin command that works without the
// server (restore, an offline backup), on stderr: its start and end are
// the operator's log lines as the server's own would be. A [log] the
// config check let through cannot fail here; if it did, the default.
func cliLog(cfg config.Config, stderr io.Writer) hclog.Logger {
	log, err := logging.New(cfg.Log.Level, cfg.Log.Format, stderr)
	if err != nil {
		log, _ = logging.New("info", "text", stderr)
	}
	return log
}
