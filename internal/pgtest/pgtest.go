// Package pgtest owns the throwaway PostgreSQL server the tests of the
// postgres backend run against: initdb into a temporary directory, the
// server listening on 127.0.0.1 on a free port with its Unix socket in that
// directory, and a fresh database per test. No system service, no build
// tag, no mock: a machine without PostgreSQL fails these tests with a
// message saying what to install, it never skips them.
//
// initdb and postgres refuse to run as root. Run as root (CI containers),
// the cluster runs as the unprivileged "nobody" user, present on every
// Debian, with its directory owned by that user; run as anyone else it runs
// as the caller.
//
// One cluster serves a whole test binary: it starts on the first DB call and
// Main stops it after the tests. The server gets SIGQUIT (immediate
// shutdown) if the test binary dies without stopping it.
//
// It must never be imported by production code.
package pgtest

import (
	"database/sql"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/testkit"
	_ "github.com/lib/pq" // the driver the store uses
)

// InstallHint is how a missing PostgreSQL is reported.
const InstallHint = "PostgreSQL is not installed: the postgres backend tests need initdb and postgres " +
	"(Debian/Ubuntu: apt-get install postgresql; CI installs it); these tests fail rather than skip without it"

// unprivileged is the user the cluster runs as when the tests run as root.
const unprivileged = "nobody"

// Cluster is one running throwaway server.
type Cluster struct {
	dir  string // owns the data directory, the socket and the log
	port int
	cmd  *exec.Cmd
	done chan struct{}
	n    atomic.Int64 // databases created so far
}

var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// DB creates an empty database for t on the shared cluster (starting it on
// first use) and returns its postgres:// URL; the database is
// dropped when t ends. It fails t when PostgreSQL is missing or does not
// start.
func DB(t testing.TB) string {
	t.Helper()
	shared.once.Do(func() { shared.c, shared.err = Start() })
	if shared.err != nil {
		t.Fatalf("pgtest: %v", shared.err)
	}
	url, err := shared.c.NewDB()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := shared.c.DropDB(url); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return url
}

// Main runs the tests of a package and stops the shared cluster after them:
// call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.Stop()
	}
	os.Exit(code)
}

// binDir finds the directory holding initdb and postgres: beside an initdb
// on PATH (following symlinks), else the newest /usr/lib/postgresql/*/bin.
func binDir() (string, error) { return findBin(exec.LookPath, "/usr/lib/postgresql/*/bin") }

func findBin(lookPath func(string) (string, error), versioned string) (string, error) {
	var dirs []string
	if p, err := lookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(r))
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	found, _ := filepath.Glob(versioned)
	sort.Slice(found, func(i, j int) bool { return version(found[i]) > version(found[j]) })
	dirs = append(dirs, found...)
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New(InstallHint)
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Start initialises and starts a cluster. Prefer DB, which shares one.
func Start() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tempRoot(cred), "grasp-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("make the cluster directory: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("hand %s to %s: %w", dir, unprivileged, err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "grasp",
		"--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	var lastErr error
	for range 3 { // the free port may be taken between probe and bind
		c := &Cluster{dir: dir, done: make(chan struct{})}
		if c.port, err = testkit.LoopbackPort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		if lastErr = c.start(bin, data, cred); lastErr == nil {
			return c, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// runAs is nil (run as the caller) unless the caller is root.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(unprivileged)
	if err != nil {
		return nil, fmt.Errorf("running as root, the cluster must run as user %q: %w", unprivileged, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// tempRoot is where the cluster directory goes: the usual temporary
// directory, unless the unprivileged user could not reach into it.
func tempRoot(cred *syscall.Credential) string {
	root := os.TempDir()
	if cred == nil {
		return root
	}
	for d := root; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == "/" {
			return root
		}
	}
}

func (c *Cluster) start(bin, data string, cred *syscall.Credential) error {
	logf, err := os.Create(filepath.Join(c.dir, "log-"+strconv.Itoa(c.port)))
	if err != nil {
		return err
	}
	defer logf.Close()
	// Durability is the server's own business and not under test here:
	// fsync off keeps CI fast. Enough connections for several instances.
	c.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(c.port),
		"-c", "unix_socket_directories="+c.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=400", "-c", "shared_buffers=32MB")
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.Dir = c.dir
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() {
		exited <- c.cmd.Wait()
		close(c.done)
	}()
	// Ready when it accepts a query; a generous bound, since CI machines
	// are slow, and the server's own exit ends the wait at once.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		db, err := sql.Open("postgres", c.url("postgres"))
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		if err == nil {
			return nil
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("postgres exited while starting (%v):\n%s", werr, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.kill()
			return fmt.Errorf("postgres did not accept connections within 2 minutes: %v", err)
		}
	}
}

func (c *Cluster) url(db string) string {
	return fmt.Sprintf("postgres://grasp@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// Port is the TCP port the server listens on (127.0.0.1).
func (c *Cluster) Port() int { return c.port }

// NewDB creates an empty database and returns its connection string.
func (c *Cluster) NewDB() (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.n.Add(1))
	db, err := sql.Open("postgres", c.url("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name + " TEMPLATE template0"); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return c.url(name), nil
}

// DropDB drops a database NewDB made, closing its remaining sessions.
func (c *Cluster) DropDB(url string) error {
	u, err := neturl.Parse(url)
	if err != nil || len(u.Path) < 2 {
		return fmt.Errorf("no database in %q", url)
	}
	name := u.Path[1:]
	db, err := sql.Open("postgres", c.url("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// Stop shuts the server down at once and removes its directory.
func (c *Cluster) Stop() {
	c.kill()
	os.RemoveAll(c.dir)
}

func (c *Cluster) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		c.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-c.done:
		case <-time.After(time.Minute):
			c.cmd.Process.Kill()
			<-c.done
		}
	}
}
