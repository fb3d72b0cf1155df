package githttp

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// packFor returns a pack with everything reachable from rev in work.
func packFor(t *testing.T, work, rev string) []byte {
	t.Helper()
	cmd := exec.Command("git", "pack-objects", "--stdout", "--revs", "-q")
	cmd.Dir = work
	cmd.Env = testkit.GitClientEnv()
	cmd.Stdin = strings.NewReader(rev + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pack-objects: %v", err)
	}
	return out
}

// bigCommit commits n bytes of incompressible data.
func bigCommit(t *testing.T, work string, n int) string {
	t.Helper()
	data := make([]byte, n)
	_, _ = rand.Read(data)
	if err := os.WriteFile(filepath.Join(work, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, work, "add", "big.bin")
	testkit.Git(t, work, "commit", "-q", "-m", "big")
	return testkit.Git(t, work, "rev-parse", "HEAD")
}

// startPartialPush sends the headers and the first half of an authorised
// push on a raw connection announcing the full length, and returns the
// connection still open.
func startPartialPush(t *testing.T, ts *testServer, owner, id string) net.Conn {
	t.Helper()
	work := testkit.GitWork(t)
	x := bigCommit(t, work, 2<<20)
	ts.auth.addState(owner, id, state("s1", 10, "", "refs/heads/main", x))
	body := append(pushBody("report-status side-band-64k", git.RefUpdate{Ref: "refs/heads/main", Old: git.ZeroOID, New: x}), packFor(t, work, x)...)
	u, _ := url.Parse(ts.srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s/git-receive-pack HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-git-receive-pack-request\r\nContent-Length: %d\r\n\r\n",
		git.RepoURLPath(owner, id), u.Host, len(body))
	if _, err := conn.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitIdle waits until no git process runs and no request holds the
// repository's lock.
func waitIdle(t *testing.T, ts *testServer, owner, id string) {
	t.Helper()
	testwait.For(t, "every process slot free", func() bool { return ts.h.slots.inUse() == 0 })
	dir, _ := ts.repos.Path(ref(owner, id))
	unlock, err := ts.repos.Lock(testwait.Context(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

// assertNothingWritten checks that an interrupted push left no refs, no
// objects and no quarantine directory behind.
func assertNothingWritten(t *testing.T, ts *testServer, owner, id string) {
	t.Helper()
	dir, _ := ts.repos.Path(ref(owner, id))
	if refs := ts.refs(owner, id); len(refs) != 0 {
		t.Fatalf("refs after aborted push: %v", refs)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "objects"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "tmp_objdir") || strings.HasPrefix(e.Name(), "incoming") {
			t.Fatalf("quarantine directory leaked: %s", e.Name())
		}
	}
	if out := testkit.Git(t, dir, "count-objects", "-v"); !strings.Contains(out, "count: 0") || !strings.Contains(out, "packs: 0") || !strings.Contains(out, "size-garbage: 0") {
		t.Fatalf("objects after aborted push:\n%s", out)
	}
}

// A client that disconnects mid-pack: git sees a truncated pack, fails,
// and its quarantine takes the partial objects with it.
func TestClientAbortMidPackLeavesNothing(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, _ := ts.newRepo("proj")
	conn := startPartialPush(t, ts, owner, "proj")
	dir, _ := ts.repos.Path(ref(owner, "proj"))
	testwait.For(t, "a quarantine directory", func() bool { return len(quarantines(dir)) > 0 })
	conn.Close()
	waitIdle(t, ts, owner, "proj")
	assertNothingWritten(t, ts, owner, "proj")
}

// A push that stalls past MaxDuration is stopped with SIGTERM (never
// SIGKILL), so git still removes its quarantine.
func TestStalledPushStoppedAfterMaxDuration(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ts := newTestServerOn(t, Options{MaxDuration: time.Minute}, fake)
	owner, _ := ts.newRepo("proj")
	conn := startPartialPush(t, ts, owner, "proj")
	defer conn.Close()
	dir, _ := ts.repos.Path(ref(owner, "proj"))
	testwait.For(t, "a quarantine directory", func() bool { return len(quarantines(dir)) > 0 })
	if !fake.BlockUntil(2, testwait.Limit(t)) {
		t.Fatal("no MaxDuration timer armed")
	}
	fake.Advance(time.Minute)
	reply := make([]byte, 4096)
	_ = conn.SetReadDeadline(testwait.Deadline(t))
	n, _ := conn.Read(reply)
	if !bytes.Contains(reply[:n], []byte("200 OK")) {
		t.Fatalf("stalled push answer: %q", reply[:n])
	}
	waitIdle(t, ts, owner, "proj")
	assertNothingWritten(t, ts, owner, "proj")
}

func quarantines(dir string) []string {
	entries, _ := os.ReadDir(filepath.Join(dir, "objects"))
	var q []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "tmp_objdir") || strings.HasPrefix(e.Name(), "incoming") {
			q = append(q, e.Name())
		}
	}
	return q
}
