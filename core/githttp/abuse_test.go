package githttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// readAll collects what conn sends until it closes (or the test's bound).
func readAll(t *testing.T, conn net.Conn) <-chan []byte {
	out := make(chan []byte, 1)
	go func() {
		_ = conn.SetReadDeadline(testwait.Deadline(t))
		b, _ := io.ReadAll(conn)
		out <- b
	}()
	return out
}

// stepUntil advances clk by step until got delivers, and returns it.
func stepUntil(t *testing.T, clk *clock.Fake, step time.Duration, got <-chan []byte) []byte {
	t.Helper()
	var b []byte
	testwait.Stepping(t, "answer", func() { clk.Advance(step) }, func() bool {
		select {
		case b = <-got:
			return true
		default:
			return false
		}
	})
	return b
}

// F04: an anonymous client that trickles a push held the repository's lock
// (every push, and the relay's OK for a state, waited) for up to an hour.
// Now the lock is free while the body arrives, the owner's push goes
// through at once, and the trickler is cut by the minimum body rate with a
// readable reason, having written nothing.
func TestAbuse_F04(t *testing.T) {
	fake := clock.NewFake(time.Now())
	ts := newTestServerOn(t, Options{}, fake)
	owner, url := ts.newRepo("proj")
	conn := startPartialPush(t, ts, owner, "proj")
	defer conn.Close()
	answer := readAll(t, conn)
	dir, _ := ts.repos.Path(ref(owner, "proj"))
	testwait.For(t, "a quarantine directory", func() bool { return len(quarantines(dir)) > 0 })

	// the lock is free: what the relay's state OK (Align) and every push take
	unlock, err := ts.repos.Lock(testwait.Context(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	// the owner pushes a newer state while the trickler still sends
	work := testkit.GitWork(t)
	z := testkit.Git(t, work, "rev-parse", "HEAD")
	ts.auth.addState(owner, "proj", state("s2", 20, "", "refs/heads/main", z))
	began := time.Now()
	if out, err := testkit.GitTry(work, "push", url, "main"); err != nil {
		t.Fatalf("owner's push during a trickling push: %v\n%s", err, out)
	}
	// a figure for the report, not an assertion (the audit's owner push
	// hung until its 15 s timeout)
	t.Logf("owner's push during a trickling push took %s", time.Since(began).Round(time.Millisecond))

	// no byte for a whole window: cut
	got := stepUntil(t, fake, 10*time.Second, answer)
	if !bytes.Contains(got, []byte("request body arrived too slowly")) {
		t.Fatalf("trickling push answer: %q", git.Clip(string(got), 400))
	}
	waitIdle(t, ts, owner, "proj")
	if refs := ts.refs(owner, "proj"); refs["refs/heads/main"] != z || len(quarantines(dir)) != 0 {
		t.Fatalf("after the trickler: refs %v, quarantines %v", refs, quarantines(dir))
	}
}

// trickleFetch opens an upload-pack request announcing a body it never
// sends, and returns the connection.
func trickleFetch(t *testing.T, ts *testServer, owner, id string) net.Conn {
	t.Helper()
	u, _ := url.Parse(ts.srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s/git-upload-pack HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 100000\r\n\r\n0032want ", git.RepoURLPath(owner, id), u.Host)
	return conn
}

// F08: each git request started a process before its body arrived, with no
// cap: 150 trickling clients held 150 upload-pack processes. Now one
// address gets MaxProcessesPerIP at once and is told why beyond that
// (rate-limited:, 429), every other address is still served, and a
// trickling request is cut by the minimum body rate, freeing its slot.
func TestAbuse_F08(t *testing.T) {
	fake := clock.NewFake(time.Now())
	ts := newTestServerOn(t, Options{MaxProcessesPerIP: 2, ClientIP: func(r *http.Request) string {
		if ip := r.Header.Get("X-Test-IP"); ip != "" {
			return ip
		}
		return clientip.Peer(r)
	}}, fake)
	owner, _, _, _ := pushedRepo(t, ts, "proj")
	c1, c2 := trickleFetch(t, ts, owner, "proj"), trickleFetch(t, ts, owner, "proj")
	defer c1.Close()
	defer c2.Close()
	a1, a2 := readAll(t, c1), readAll(t, c2)
	testwait.For(t, "two process slots in use", func() bool { return ts.h.slots.inUse() == 2 })

	path := git.RepoURLPath(owner, "proj") + "/info/refs?service=git-upload-pack"
	resp, body := ts.get(path)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.HasPrefix(body, "rate-limited: 2 git requests from your address are already running here (limit 2)") {
		t.Fatalf("third request from one address = %d %q", resp.StatusCode, body)
	}
	if resp, body := ts.get(path, "X-Test-IP", "192.0.2.7"); resp.StatusCode != http.StatusOK {
		t.Fatalf("another address while one is at its cap = %d %q", resp.StatusCode, body)
	}

	for _, a := range []<-chan []byte{a1, a2} {
		got := stepUntil(t, fake, 10*time.Second, a)
		if !bytes.Contains(got, []byte("request body arrived too slowly")) {
			t.Fatalf("trickling fetch answer: %q", git.Clip(string(got), 400))
		}
	}
	testwait.For(t, "every process slot free", func() bool { return ts.h.slots.inUse() == 0 })
	if resp, body := ts.get(path); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the tricklers were cut = %d %q", resp.StatusCode, body)
	}
}

// F10: receive.fsckObjects was off, so anyone could make the server host a
// tree with a .git entry (an attack on whoever checks it out). Now such a
// push is refused with git's fsck reason and nothing is written.
func TestAbuse_F10(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	b := strings.TrimSpace(gitRunIn(t, work, "hello\n", "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(gitRunIn(t, work, "100644 blob "+b+"\t.git\n", "mktree"))
	bad := strings.TrimSpace(gitRunIn(t, work, "", "commit-tree", tree, "-m", "evil"))
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", bad))
	out, err := testkit.GitTry(work, "push", url, bad+":refs/heads/main")
	if err == nil || !strings.Contains(out, "hasDotgit") {
		t.Fatalf("push of a .git tree entry: err=%v\n%s", err, out)
	}
	if refs := ts.refs(owner, "proj"); len(refs) != 0 {
		t.Fatalf("refs after a refused push: %v", refs)
	}
	dir, _ := ts.repos.Path(ref(owner, "proj"))
	if out := testkit.Git(t, dir, "count-objects", "-v"); !strings.Contains(out, "count: 0") || !strings.Contains(out, "packs: 0") {
		t.Fatalf("objects after a refused push:\n%s", out)
	}

	// the hunter's fetch from another server is checked the same way: the
	// object is planted behind grasp's back, then fetched over HTTP
	testkit.Git(t, work, "push", "-q", dir, bad+":refs/heads/main")
	dst, _ := ts.newRepo("proj")
	stderr, err := ts.repos.Fetch(context.Background(), ref(dst, "proj"), git.FetchSpec{URL: url, OIDs: []string{bad}})
	if err == nil || !strings.Contains(stderr, "hasDotgit") {
		t.Fatalf("hunter fetch of a .git tree entry: %v, stderr %q", err, stderr)
	}
	if has, _ := ts.repos.HasObjects(context.Background(), ref(dst, "proj"), []string{bad}); has[bad] {
		t.Fatal("the refused object was fetched")
	}
}

// F11: with a pack lacking one ref's objects, git 2.39 rejects that ref and
// moves the others, even with `atomic`: the repository then matches no
// signed state. Now the push is refused as a whole and no ref moves.
func TestAbuse_F11(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	y := testkit.GitCommit(t, work, "second")
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x, "refs/heads/dev", y))
	// the pack carries x's objects only
	body := append(pushBody("report-status side-band-64k atomic",
		git.RefUpdate{Ref: "refs/heads/main", Old: git.ZeroOID, New: x},
		git.RefUpdate{Ref: "refs/heads/dev", Old: git.ZeroOID, New: y}), packFor(t, work, x)...)
	_, out := post(t, url, svcReceive, body)
	if !bytes.Contains(out, []byte("push refused as a whole")) {
		t.Fatalf("partial pack answer: %q", out)
	}
	if refs := ts.refs(owner, "proj"); len(refs) != 0 {
		t.Fatalf("a partial pack moved refs: %v", refs)
	}
}

// gitRunIn runs git in dir with stdin and fails the test on error.
func gitRunIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testkit.GitClientEnv()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
