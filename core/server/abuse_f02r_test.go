package server_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
)

// F02 follow-up (audit 2026-11b, F02r): with nostr_ref_ttl shorter than the
// 10-minute prune grace, the repository left the prune list at the first
// sweep after the placeholder expired, while its objects were still inside
// the grace, and was never pruned again: an expired 58 MB placeholder was
// still on disk and fetchable by id eleven minutes later. The operator now
// sees the data gone once the grace has passed, whatever the TTL.
func TestAbuse_F02_ShortTTL(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Purgatory.NostrRefTTL = config.Duration(10 * time.Second)
		c.Purgatory.SweepInterval = config.Duration(time.Minute)
	})
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	e.release(a, "repo", w, x)
	dir, err := e.srv.Repos().Path(a.repo("repo"))
	if err != nil {
		t.Fatal(err)
	}
	objects := filepath.Join(dir, "objects")

	mustGit(t, w.dir, "checkout", "-q", "-b", "pr")
	mid := w.commitRandom("mid.bin", 700<<10)
	ref := "refs/nostr/" + strings.Repeat("5", 64)
	if out, err := w.push(url, mid+":"+ref); err != nil {
		t.Fatalf("placeholder within the quota: %v\n%s", err, out)
	}
	held := dirBytes(t, objects)
	start := e.clk.Now()
	e.advanceUntil(time.Minute, func() bool {
		if e.clk.Now().Sub(start) > time.Hour {
			t.Fatalf("an hour after a 10 s placeholder expired its data is still on disk: %d bytes (%d with it)", dirBytes(t, objects), held)
		}
		_, ok := lsRemote(t, url)["refs/nostr/"+strings.Repeat("5", 64)]
		return !ok && dirBytes(t, objects) < held-600<<10
	})
	t.Logf("objects: %d bytes with the placeholder, %d after its expiry (%v of fake time)", held, dirBytes(t, objects), e.clk.Now().Sub(start))
	if _, err := gitRun(t, dir, "cat-file", "-e", mid); err == nil {
		t.Fatal("the expired placeholder's commit is still in the repository")
	}
	// fetched by id over protocol v2, as the audit did
	probe := newWork(t)
	if out, err := gitRun(t, probe.dir, "-c", "protocol.version=2", "fetch", url, mid); err == nil {
		t.Fatalf("the expired placeholder's commit is still served by id:\n%s", out)
	}
	if lsRemote(t, url)["refs/heads/main"] != x {
		t.Fatal("pruning placeholder data touched main")
	}
	if out, err := gitRun(t, dir, "fsck", "--connectivity-only"); err != nil {
		t.Fatalf("repository broken after pruning: %v\n%s", err, out)
	}
}
