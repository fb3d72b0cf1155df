package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Issue 15 ("What it must show"): NIP-77 clients that users actually run,
// nostr-tools' and NDK's, reconcile with the gate. The clients are the npm
// packages pinned in testdata/jsinterop (package-lock.json), run by node.
// node_modules is not in the tree: it is installed once with `npm ci` into
// the user's cache directory, keyed by the lock file's hash, and reused.

const jsInteropSrc = "testdata/jsinterop"

var jsInterop struct {
	mu  sync.Mutex
	dir string
	// failed is set while installing and stays set when the install
	// failed its test, so that later tests fail at once instead of
	// repeating a long npm ci.
	failed bool
}

// jsClientDir returns a directory holding the pinned node_modules and the
// client scripts, installing the packages on first use. It fails the test
// when node or npm is missing or the install fails: the interop tests are
// part of what the relay must show, not optional.
func jsClientDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the NIP-77 interop tests need %s on PATH (Debian: apt-get install nodejs npm): %v", tool, err)
		}
	}
	jsInterop.mu.Lock()
	defer jsInterop.mu.Unlock()
	if jsInterop.failed {
		t.Fatalf("installing the NIP-77 interop clients failed in an earlier test of this run (see its output)")
	}
	if jsInterop.dir == "" {
		jsInterop.failed = true
		jsInterop.dir = installJSClients(t)
		jsInterop.failed = false
	}
	// The scripts are copied on every run (they are small, and editing one
	// must not need a new lock file); rename keeps a concurrent test
	// process from running a half-written file.
	scripts, err := filepath.Glob(filepath.Join(jsInteropSrc, "*.mjs"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no client scripts in %s (%v)", jsInteropSrc, err)
	}
	for _, src := range scripts {
		copyFileAtomic(t, src, filepath.Join(jsInterop.dir, filepath.Base(src)))
	}
	return jsInterop.dir
}

// installJSClients runs `npm ci` for testdata/jsinterop's lock file into
// <cache>/grasp-jsinterop/<hash>, unless an earlier run already did.
func installJSClients(t *testing.T) string {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(jsInteropSrc, "package-lock.json"))
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
		copyFileAtomic(t, filepath.Join(jsInteropSrc, name), filepath.Join(tmp, name))
	}
	ctx := testwait.Context(t)
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("npm ci for the NIP-77 interop clients failed (%v; needs the npm registry on first run):\n%s", err, out.String())
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

func copyFileAtomic(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("read %s: %v", src, err)
	}
	tmp := dst + ".tmp-" + randHex(4)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatalf("write %s: %v", tmp, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		t.Fatalf("rename to %s: %v", dst, err)
	}
}

type jsItem struct {
	CreatedAt int64  `json:"created_at"`
	ID        string `json:"id"`
}

// runJSClient runs script (a file of testdata/jsinterop) against url with
// local as the client's set, and returns the ids it reports it has that the
// relay lacks (have) and the ids the relay has that it lacks (need).
func runJSClient(t *testing.T, script, url string, filter nostr.Filter, local []*nostr.Event) (have, need []string) {
	t.Helper()
	dir := jsClientDir(t)
	in := struct {
		Filter nostr.Filter `json:"filter"`
		Items  []jsItem     `json:"items"`
	}{Filter: filter}
	for _, evt := range local {
		in.Items = append(in.Items, jsItem{int64(evt.CreatedAt), evt.ID})
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("marshal client items: %v", err)
	}
	items := filepath.Join(t.TempDir(), "items.json")
	if err := os.WriteFile(items, b, 0o644); err != nil {
		t.Fatalf("write client items: %v", err)
	}
	ctx := testwait.Context(t)
	cmd := exec.CommandContext(ctx, "node", script, url, items)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("node %s did not finish within %v:\n%s", script, testwait.Limit(t), stderr.String())
		}
		t.Fatalf("node %s: %v\nstderr:\n%s\nstdout:\n%s", script, err, stderr.String(), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", script, stderr.String())
	}
	var out struct {
		Have []string `json:"have"`
		Need []string `json:"need"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		t.Fatalf("node %s printed %q, not {have, need}: %v\nstderr:\n%s", script, stdout.String(), err, stderr.String())
	}
	return out.Have, out.Need
}

// jsInteropSync stores 300 events in the relay and lets the JS client, which
// holds 220 of them plus 70 the relay lacks, reconcile; the client must name
// exactly the 80 it lacks as needed and its 70 extras as had. Timestamps
// fall in a 5,000 s window, so some share a second and order by id.
func jsInteropSync(t *testing.T, e *testEnv, script string, filter nostr.Filter) {
	t.Helper()
	relaySet := make([]*nostr.Event, 300)
	for i := range relaySet {
		relaySet[i] = fakeEvent(1_700_000_000 + int64(rand.IntN(5000)))
		if err := e.store.SaveEvent(context.Background(), relaySet[i]); err != nil {
			t.Fatalf("seed store: %v", err)
		}
	}
	var missing, local, extra []*nostr.Event
	for j, k := range rand.Perm(len(relaySet)) {
		if j < 80 {
			missing = append(missing, relaySet[k])
		} else {
			local = append(local, relaySet[k])
		}
	}
	for range 70 {
		extra = append(extra, fakeEvent(1_700_000_000+int64(rand.IntN(5000))))
	}
	local = append(local, extra...)

	have, need := runJSClient(t, script, e.url, filter, local)
	if !sameSet(need, ids(missing)) {
		t.Errorf("%s: client needs %d ids (%d of them among the %d it lacks), want exactly those %d",
			script, len(need), countIn(need, missing), len(missing), len(missing))
	}
	if !sameSet(have, ids(extra)) {
		t.Errorf("%s: client has %d ids to give (%d of them among its %d extras), want exactly those %d",
			script, len(have), countIn(have, extra), len(extra), len(extra))
	}
	// The answer came from a NIP-77 session, not a fallback to REQ.
	if got := e.counter("grasp_gate_negentropy_sessions_total"); got != 1 {
		t.Errorf("%s: %v NIP-77 sessions opened, want 1", script, got)
	}
	if got := e.counter("grasp_gate_negentropy_errors_total"); got != 0 {
		t.Errorf("%s: %v NEG-ERR replies, want 0", script, got)
	}
}

func countIn(got []string, want []*nostr.Event) int {
	set := map[string]bool{}
	for _, evt := range want {
		set[evt.ID] = true
	}
	n := 0
	for _, id := range got {
		if set[id] {
			n++
		}
	}
	return n
}

// The two stores behind NEG-OPEN: the negentropy index (core/negindex), and
// the scan of a query's results when there is no index.
var jsInteropEnvs = []struct {
	name string
	env  func(*testing.T, config.Limits) *testEnv
}{
	{"index", newEnvIndexed},
	{"scan", newEnv},
}

// TestR2_NIP77Interop_NostrTools reconciles with nostr-tools' NegentropySync
// (its filter sent as one object).
func TestR2_NIP77Interop_NostrTools(t *testing.T) {
	for _, c := range jsInteropEnvs {
		t.Run(c.name, func(t *testing.T) {
			jsInteropSync(t, c.env(t, config.Limits{}), "nostrtools.mjs", nostr.Filter{Kinds: []int{1}})
		})
	}
}

// TestR2_NIP77Interop_NDK reconciles with NDK's NDKSync
// (@nostr-dev-kit/sync), whose NEG-OPEN carries its filters in an array.
func TestR2_NIP77Interop_NDK(t *testing.T) {
	for _, c := range jsInteropEnvs {
		t.Run(c.name, func(t *testing.T) {
			jsInteropSync(t, c.env(t, config.Limits{}), "ndk.mjs", nostr.Filter{Kinds: []int{1}})
		})
	}
}
