package server_test

import (
	"crypto/rand"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
)

// dirBytes is the disk a directory's files take (their sizes).
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// commitRandom commits n bytes of incompressible data on a new orphan-free
// branch point of w and returns the commit.
func (w *work) commitRandom(name string, n int) string {
	w.t.Helper()
	data := make([]byte, n)
	_, _ = rand.Read(data)
	if err := os.WriteFile(filepath.Join(w.dir, name), data, 0o644); err != nil {
		w.t.Fatal(err)
	}
	mustGit(w.t, w.dir, "add", name)
	mustGit(w.t, w.dir, "commit", "-q", "-m", name)
	return mustGit(w.t, w.dir, "rev-parse", "HEAD")
}

// F02: anyone may push refs/nostr/<id> placeholders without an event. The
// operator sees every such push bounded before it is written (count per
// repository, bytes as they arrive, refused with rate-limited:), the owner
// still able to push, and the data of an expired placeholder gone from disk
// and no longer fetchable, not only its ref.
func TestAbuse_F02(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Purgatory.NostrRefTTL = config.Duration(20 * time.Minute)
		c.Purgatory.SweepInterval = config.Duration(time.Minute)
		c.Purgatory.MaxPlaceholdersPerRepo = 2
		c.Purgatory.MaxPlaceholderMBPerRepo = 1
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
	id := func(c string) string { return strings.Repeat(c, 64) }
	placeholders := func() int {
		n := 0
		for ref := range lsRemote(t, url) {
			if strings.HasPrefix(ref, "refs/nostr/") {
				n++
			}
		}
		return n
	}

	// count: three placeholders in one push, two allowed per repository
	p := w.commit("p")
	out, err := w.push(url, p+":refs/nostr/"+id("1"), p+":refs/nostr/"+id("2"), p+":refs/nostr/"+id("3"))
	if err == nil || !strings.Contains(out, "rate-limited:") || !strings.Contains(out, "(limit 2)") {
		t.Fatalf("3 placeholders where 2 are allowed: err=%v\n%s", err, out)
	}
	if n := placeholders(); n != 0 {
		t.Fatalf("%d placeholders written by a refused push", n)
	}

	// bytes: 2 MiB where the repository's placeholders may hold 1 MiB
	before := dirBytes(t, objects)
	big := w.commitRandom("big.bin", 2<<20)
	out, err = w.push(url, big+":refs/nostr/"+id("4"))
	if err == nil || !strings.Contains(out, "rate-limited:") || !strings.Contains(out, "may hold 1 MiB") {
		t.Fatalf("2 MiB placeholder where 1 MiB is allowed: err=%v\n%s", err, out)
	}
	if n := placeholders(); n != 0 {
		t.Fatalf("%d placeholders written by a refused push", n)
	}
	if after := dirBytes(t, objects); after > before+64<<10 {
		t.Fatalf("a refused 2 MiB push grew the repository from %d to %d bytes", before, after)
	}

	// the owner still pushes
	mustGit(t, w.dir, "reset", "-q", "--hard", x)
	y := w.commit("y")
	cl := e.dial()
	e.clk.Advance(time.Second) // a newer state than the first
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": y}, "refs/heads/main"), "")
	if out, err := w.push(url, "main:refs/heads/main"); err != nil {
		t.Fatalf("owner's push after the refusals: %v\n%s", err, out)
	}

	// expiry: a 700 KiB placeholder within the quota, then its TTL passes
	mustGit(t, w.dir, "checkout", "-q", "-b", "pr")
	mid := w.commitRandom("mid.bin", 700<<10)
	if out, err := w.push(url, mid+":refs/nostr/"+id("5")); err != nil {
		t.Fatalf("placeholder within the quota: %v\n%s", err, out)
	}
	held := dirBytes(t, objects)
	e.advanceUntil(time.Minute, func() bool {
		_, ok := lsRemote(t, url)["refs/nostr/"+id("5")]
		return !ok && dirBytes(t, objects) < held-600<<10
	})
	t.Logf("objects: %d bytes with the placeholder, %d after its expiry", held, dirBytes(t, objects))
	if _, err := gitRun(t, dir, "cat-file", "-e", mid); err == nil {
		t.Fatal("the expired placeholder's commit is still in the repository")
	}
	if lsRemote(t, url)["refs/heads/main"] != y {
		t.Fatal("pruning placeholder data touched main")
	}
	if out, err := gitRun(t, dir, "fsck", "--connectivity-only"); err != nil {
		t.Fatalf("repository broken after pruning: %v\n%s", err, out)
	}
}
