package server_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
)

// F12: a full data disk crashed the server (SIGBUS in badger) and kept it
// from starting. With the free-space watermark the operator sees the server
// start on a full disk, serve what it has, and refuse writes with a
// readable error: a push (git prints it per ref), a held announcement and a
// stored event (OK false "error: ..."); nothing is written, and writes go
// on once space is freed.
func TestAbuse_F12(t *testing.T) {
	var free atomic.Uint64
	free.Store(10 << 30)
	e := newEnvOn(t, func(c *config.Config) { c.Server.MinFreeMB = 1024 }, func(string) (uint64, error) { return free.Load(), nil })
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	e.release(a, "repo", w, x)

	// a state for y while there is room, then the disk fills
	y := w.commit("y")
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": y}, "refs/heads/main"), "")
	free.Store(100 << 20) // below the 1024 MiB watermark
	const full = "error: this server is low on disk space (100 MiB free, it keeps 1024 MiB)"
	if out, err := w.push(url, "main:refs/heads/main"); err == nil || !strings.Contains(out, full) {
		t.Fatalf("push on a full disk: err=%v\n%s", err, out)
	}
	if got := lsRemote(t, url)["refs/heads/main"]; got != x {
		t.Fatalf("main moved to %s on a full disk", got)
	}
	// an event to store
	e.clk.Advance(time.Second)
	cl.mustReject(e.sign(a, 1621, nostr.Tags{{"a", "30617:" + a.PK + ":repo"}, {"subject", "s"}}, "issue"), full)
	// a new announcement (would be held, with a bare repository)
	b := newKey(t)
	cl.mustReject(e.announcement(b, "other"), full)
	if infoRefsStatus(t, e.cloneURL(b, "other")) != 404 {
		t.Fatal("a bare repository was created on a full disk")
	}
	// reads go on
	if lsRemote(t, url)["refs/heads/main"] != x {
		t.Fatal("reads refused on a full disk")
	}

	// a restart on the full disk
	e2 := newEnvOn(t, func(c *config.Config) { c.Server.MinFreeMB = 1024 }, func(string) (uint64, error) { return 100 << 20, nil })
	cl2 := e2.dial()
	cl2.mustReject(e2.announcement(b, "other"), full)

	// space freed: the same writes go through
	free.Store(10 << 30)
	if out, err := w.push(url, "main:refs/heads/main"); err != nil {
		t.Fatalf("push after space was freed: %v\n%s", err, out)
	}
}
