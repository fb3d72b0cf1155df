// Package jsinterop owns the JavaScript clients that tests run against the
// server with node: the npm packages users run (nostr-tools, NDK), pinned
// in clients/package-lock.json, and the small scripts in clients/ that
// drive them (NIP-77 reconciliation for core/gate, a NIP-86 call with
// nostr-tools' NIP-98 for core/server). node_modules is never in the tree:
// `npm ci` installs it once into the user's cache directory, keyed by the
// lock file's hash, and later runs reuse it. Test code only; it never
// decides anything about the server.
package jsinterop

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/testwait"
)

var state struct {
	mu  sync.Mutex
	dir string
	// failed is set while installing and stays set when the install
	// failed its test, so that later tests fail at once instead of
	// repeating a long npm ci.
	failed bool
}

// src is the clients' directory in the source tree.
func src(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("jsinterop: cannot find its source directory")
	}
	return filepath.Join(filepath.Dir(file), "clients")
}

// Dir returns a directory holding the pinned node_modules and the client
// scripts, installing the packages on first use. It fails the test when
// node or npm is missing or the install fails: the interop tests are part
// of what the server must show, not optional.
func Dir(t testing.TB) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the JavaScript interop tests need %s on PATH (Debian: apt-get install nodejs npm): %v", tool, err)
		}
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.failed {
		t.Fatalf("installing the JavaScript interop clients failed in an earlier test of this run (see its output)")
	}
	if state.dir == "" {
		state.failed = true
		state.dir = install(t)
		state.failed = false
	}
	// The scripts are copied on every run (they are small, and editing one
	// must not need a new lock file); rename keeps a concurrent test
	// process from running a half-written file.
	scripts, err := filepath.Glob(filepath.Join(src(t), "*.mjs"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no client scripts in %s (%v)", src(t), err)
	}
	for _, s := range scripts {
		copyFileAtomic(t, s, filepath.Join(state.dir, filepath.Base(s)))
	}
	return state.dir
}

// install runs `npm ci` for the lock file into
// <cache>/grasp-jsinterop/<hash>, unless an earlier run already did.
func install(t testing.TB) string {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(src(t), "package-lock.json"))
	if err != nil {
		t.Fatalf("read lock file: %v", err)
	}
	sum := sha256.Sum256(lock)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	root := filepath.Join(base, "grasp-jsinterop")
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	// The marker is written last, so a directory without it is an install
	// that did not finish.
	marker := filepath.Join(dir, "node_modules", ".grasp-installed")
	if _, err := os.Stat(marker); err == nil {
		return dir
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatalf("create npm cache directory: %v", err)
	}
	// Install beside the final place and rename it in, so that test
	// processes running at once (go test ./... runs packages in parallel)
	// never see a partial node_modules.
	tmp, err := os.MkdirTemp(root, "install-")
	if err != nil {
		t.Fatalf("create npm install directory: %v", err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		copyFileAtomic(t, filepath.Join(src(t), name), filepath.Join(tmp, name))
	}
	ctx := testwait.Context(t)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("npm ci for the JavaScript interop clients failed (%v; needs the npm registry on first run):\n%s", err, out.String())
	}
	t.Logf("npm ci installed the interop clients into %s in %v", dir, time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(tmp, "node_modules", ".grasp-installed"), nil, 0o644); err != nil {
		t.Fatalf("mark install done: %v", err)
	}
	// A leftover unfinished install is moved away first; a finished one
	// from a concurrent process wins and ours is discarded.
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(marker); err == nil {
			return dir
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatalf("remove unfinished install %s: %v", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(marker); serr == nil {
			return dir
		}
		t.Fatalf("move install into place: %v", err)
	}
	return dir
}

func copyFileAtomic(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read %s: %v", src, err)
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	tmp := dst + ".tmp-" + hex.EncodeToString(r[:])
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatalf("write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		t.Fatalf("rename to %s: %v", dst, err)
	}
}
