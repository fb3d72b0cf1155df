package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// plainGit is a foreign git smart-HTTP host (git http-backend) serving the
// bare repos under its root; only it has their data.
func plainGit(t *testing.T) (root, base string) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	h := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}, Stderr: io.Discard}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainGitRequests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return root, srv.URL
}

// plainGitRequests counts requests to every plainGit host of the process.
var plainGitRequests atomic.Int64

// seedBare pushes w's HEAD into a new bare repo root/name.git.
func seedBare(t *testing.T, root, name string, w *work, refspecs ...string) {
	t.Helper()
	dir := filepath.Join(root, name+".git")
	mustGit(t, root, "init", "-q", "--bare", dir)
	mustGit(t, dir, "config", "uploadpack.allowReachableSHA1InWant", "true")
	mustGit(t, w.dir, append([]string{"push", "-q", dir}, refspecs...)...)
}

// advanceUntil moves the fake clock in steps until cond holds, giving the
// hunter's real git fetches time to run between steps.
func (e *testServer) advanceUntil(step time.Duration, cond func() bool) {
	e.t.Helper()
	testwait.Stepping(e.t, "condition", func() { e.clk.Advance(step) }, cond)
}

func TestG02_HuntReleasesSyncedStateFromForeignGitHost(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	w.commit("y") // x is not a tip: fetched by id, with full history
	seedBare(t, gitRoot, "repo", w, "main:refs/heads/main")

	ann := e.announcement(a, "repo", nostr.Tag{"clone", gitURL + "/repo.git"})
	cl.mustAccept(ann, purg)
	st := e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main")
	if ok, msg := e.srv.Relay().Ingest(context.Background(), st, policy.Meta{Source: policy.SourceSync, Remote: "ws://peer.example"}); !ok || !strings.HasPrefix(msg, purg) {
		t.Fatalf("synced state: %v %q", ok, msg)
	}
	// the synced delay is short (500 ms); no push comes
	e.advanceUntil(200*time.Millisecond, func() bool { return cl.served(st.ID) })
	if !cl.served(ann.ID) {
		t.Fatal("announcement not released with its state's data")
	}
	refs := lsRemote(t, e.cloneURL(a, "repo"))
	if refs["refs/heads/main"] != x {
		t.Fatalf("refs after the hunt: %v, want main=%s", refs, x)
	}
	// full history, not shallow
	clone := t.TempDir()
	mustGit(t, clone, "clone", "-q", e.cloneURL(a, "repo"), "c")
	if n := mustGit(t, clone+"/c", "rev-list", "--count", "HEAD"); n != "1" {
		t.Fatalf("history length %s", n)
	}
}

func TestG02_HuntFetchesPRTipFromItsCloneURL(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	e := newEnv(t, nil)
	cl := e.dial()
	a, k := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x)
	p := w.commit("proposal")
	seedBare(t, gitRoot, "fork", w, "main:refs/heads/pr")
	pr := e.sign(k, 1618, nostr.Tags{{"a", "30617:" + a.PK + ":repo"}, {"c", p}, {"clone", gitURL + "/fork.git"}}, "")
	cl.mustAccept(pr, purg)
	// a client-submitted PR waits user_fetch_delay (3 min) for a push first;
	// small steps leave the hunt's real git fetch ample time before the
	// purgatory TTL (30 min) is advanced past
	e.advanceUntil(2*time.Second, func() bool { return cl.served(pr.ID) })
	if got := lsRemote(t, e.cloneURL(a, "repo"))["refs/nostr/"+pr.ID]; got != p {
		t.Fatalf("refs/nostr/%s = %q, want %s", pr.ID, got, p)
	}
}

func TestG02_HuntFromAnotherGraspInstance(t *testing.T) {
	a := newKey(t)
	peer := newEnv(t, nil)
	e := newEnv(t, nil)
	w := newWork(t)
	x := w.commit("x")
	// the same announcement on both servers, listing both
	tags := nostr.Tags{{"d", "repo"}, {"clone", e.cloneURL(a, "repo"), peer.cloneURL(a, "repo")}, {"relays", e.ws, peer.ws}}
	ann := e.sign(a, 30617, tags, "")
	st := e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main")
	pc := peer.dial()
	pc.mustAccept(ann, purg)
	pc.mustAccept(st, purg)
	if out, err := w.push(peer.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push to peer: %v\n%s", err, out)
	}
	cl := e.dial()
	cl.mustAccept(ann, purg)
	if ok, msg := e.srv.Relay().Ingest(context.Background(), st, policy.Meta{Source: policy.SourceSync}); !ok {
		t.Fatalf("synced state refused: %q", msg)
	}
	e.advanceUntil(200*time.Millisecond, func() bool { return cl.served(st.ID) })
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != x {
		t.Fatalf("refs %v", refs)
	}
}

func TestG02_EventExpiresCleanlyWhenNoServerHasTheData(t *testing.T) {
	_, gitURL := plainGit(t) // reachable, but has no such repo
	e := newEnv(t, func(c *config.Config) {
		c.Purgatory.TTL = config.Duration(2 * time.Minute)
		c.Purgatory.SweepInterval = config.Duration(10 * time.Second)
	})
	cl := e.dial()
	a := newKey(t)
	ann := e.announcement(a, "repo", nostr.Tag{"clone", gitURL + "/repo.git"}, nostr.Tag{"clone", "http://127.0.0.1:1/dead.git"})
	cl.mustAccept(ann, purg)
	st := e.state(a, "repo", map[string]string{"refs/heads/main": strings.Repeat("ab", 20)}, "")
	if ok, _ := e.srv.Relay().Ingest(context.Background(), st, policy.Meta{Source: policy.SourceSync}); !ok {
		t.Fatal("synced state refused")
	}
	url := e.cloneURL(a, "repo")
	e.advanceUntil(5*time.Second, func() bool { return infoRefsStatus(t, url) == http.StatusNotFound })
	cl = e.dial()
	if cl.served(st.ID) || cl.served(ann.ID) {
		t.Fatal("expired events served")
	}
	if e.srv.Purgatory().Len() != 0 {
		t.Fatalf("purgatory still holds %d events", e.srv.Purgatory().Len())
	}
	testwait.For(t, "the hunter to watch no repository", func() bool { return e.srv.Hunter().Stats().Repos == 0 })
}

func TestG02_HourlyRecheckRestoresADriftedRepo(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	e := newEnv(t, func(c *config.Config) { c.Purgatory.RecheckInterval = config.Duration(time.Hour) })
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	seedBare(t, gitRoot, "repo", w, "main:refs/heads/main")
	e.release(a, "repo", w, x, nostr.Tag{"clone", gitURL + "/repo.git"})
	// the repo loses its data (disk replaced, operator mistake ...)
	ctx := context.Background()
	if err := e.srv.Repos().Delete(ctx, a.repo("repo")); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Repos().Create(ctx, a.repo("repo")); err != nil {
		t.Fatal(err)
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); len(refs) != 0 {
		t.Fatalf("repo not empty: %v", refs)
	}
	// no new event: the hourly re-check finds the drift and hunts the data
	e.advanceUntil(5*time.Minute, func() bool { return lsRemote(t, e.cloneURL(a, "repo"))["refs/heads/main"] == x })
}

// The hunter's SSRF guard is on by default: a clone URL on an internal
// address is never fetched, and the event stays held.
func TestG02_HuntRefusesInternalSourcesByDefault(t *testing.T) {
	gitRoot, gitURL := plainGit(t)
	e := newEnv(t, func(c *config.Config) { c.Purgatory.FetchPrivateAddresses = false })
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	seedBare(t, gitRoot, "repo", w, "main:refs/heads/main")
	cl.mustAccept(e.announcement(a, "repo", nostr.Tag{"clone", gitURL + "/repo.git"}), purg)
	st := e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main")
	before := plainGitRequests.Load()
	if ok, _ := e.srv.Relay().Ingest(context.Background(), st, policy.Meta{Source: policy.SourceSync}); !ok {
		t.Fatal("synced state refused")
	}
	testwait.For(t, "the hunter to fetch", func() bool {
		e.clk.Advance(time.Second)
		return e.srv.Hunter().Stats().Fetches > 0
	})
	cl = e.dial()
	if cl.served(st.ID) {
		t.Fatal("state released from an internal source")
	}
	if n := plainGitRequests.Load() - before; n != 0 {
		t.Fatalf("the internal git host saw %d requests", n)
	}
}
