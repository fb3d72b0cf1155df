package server_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/diskspace"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testlog"
)

// F12, follow-up (issue 24 part 7): a full disk is survivable. The data
// directory is on a real filesystem of 64 MiB, filled to the last page
// with the server stopped, as a disk fills while a server is down or
// crashed on it. The server starts anyway, read-only: it serves what it
// has (REQ, clone), refuses writes (EVENT, push) with "error:", logs how
// much to free, and takes writes again once space is freed and it is
// restarted. Before, it could not start at all: badger failed to write
// its LOCK pid file, so reads were down too.
//
// The filesystem is a tmpfs mounted in a mount namespace of the test's
// own (smallDisk): it answers a full disk exactly as ext4 does, ENOSPC on
// write and on creating a file's first block, so nothing is injected.
func TestAbuse_F12_StartOnFullDisk(t *testing.T) {
	disk := smallDisk(t, 64<<20)
	if disk == "" {
		return // the test ran in its own mount namespace: see smallDisk
	}
	// Two watermarks: 8 MiB (start below it: read-only by choice) and 0
	// (no check: read-only because the store cannot be opened for
	// writing).
	for _, minFree := range []int{8, 0} {
		t.Run(fmt.Sprintf("min_free_mb=%d", minFree), func(t *testing.T) {
			data := filepath.Join(disk, fmt.Sprint("data", minFree))
			port := testkit.FreePort(t)
			cfg := config.Default()
			cfg.Server.Listen = fmt.Sprintf("127.0.0.1:%d", port)
			cfg.Server.PublicURL = "http://" + cfg.Server.Listen
			cfg.Server.DataDir = data
			cfg.Server.MinFreeMB = minFree
			cfg.Metrics.Enabled = false
			cfg.Purgatory.FetchPrivateAddresses = true
			cfg.Sync.Enabled = false

			e := startEnv(t, cfg, nil, server.Extensions{})
			k := newKey(t)
			w := newWork(t)
			tip := w.commit("one")
			ann := e.release(k, "repo", w, tip)
			issue := e.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "kept"}}, "an issue")
			e.dial().mustAccept(issue, "")
			// a state for a commit not pushed yet: held, so that the push
			// below is authorised and meets the full disk
			next := w.commit("two")
			e.clk.Advance(time.Second)
			e.dial().mustAccept(e.state(k, "repo", map[string]string{"refs/heads/main": next}, "refs/heads/main"), purg)
			e.stop()
			if err := e.srv.Wait(); err != nil {
				t.Fatal(err)
			}

			filler := fillDisk(t, disk)
			t.Cleanup(func() { os.Remove(filler) })
			var log testlog.Buffer
			e = startEnvLog(t, cfg, nil, server.Extensions{}, hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Info}))
			cl := e.dial()
			if !cl.served(ann.ID) || !cl.served(issue.ID) {
				t.Fatal("a read-only server does not serve what it has")
			}
			if got := lsRemote(t, e.cloneURL(k, "repo"))["refs/heads/main"]; got != tip {
				t.Fatalf("main is %q on a full disk, want %s", got, tip)
			}
			clone := t.TempDir()
			mustGit(t, clone, "clone", "-q", e.cloneURL(k, "repo"), "c")
			// an EVENT and a push: refused with the reason, nothing written
			refused := "error: this server is " // low on disk space / read-only
			e.clk.Advance(time.Second)
			cl.mustReject(e.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "refused"}}, "no room"), refused)
			if out, err := w.push(e.cloneURL(k, "repo"), "main:refs/heads/main"); err == nil || !strings.Contains(out, refused) {
				t.Fatalf("a push on a full disk: %v\n%s", err, out)
			}
			if got := lsRemote(t, e.cloneURL(k, "repo"))["refs/heads/main"]; got != tip {
				t.Fatalf("main moved to %s on a full disk", got)
			}
			want := "free at least 64 MiB" // room to open the store, with no watermark
			if minFree > 0 {
				want = fmt.Sprintf("free at least %d MiB", minFree)
			}
			if s := log.String(); !strings.Contains(s, "the store is read-only: "+want) {
				t.Fatalf("the log does not say what to free (%q):\n%s", want, s)
			}
			e.stop()
			if err := e.srv.Wait(); err != nil {
				t.Fatal(err)
			}

			// Space freed, restarted: writes are taken again.
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			e = startEnv(t, cfg, nil, server.Extensions{})
			cl = e.dial()
			e.clk.Advance(2 * time.Second)
			cl.mustAccept(e.sign(k, 1621, nostr.Tags{{"a", "30617:" + k.PK + ":repo"}, {"subject", "after"}}, "room again"), "")
			if out, err := w.push(e.cloneURL(k, "repo"), "main:refs/heads/main"); err != nil {
				t.Fatalf("a push once space was freed: %v\n%s", err, out)
			}
			if got := lsRemote(t, e.cloneURL(k, "repo"))["refs/heads/main"]; got != next {
				t.Fatalf("main is %s after the push, want %s", got, next)
			}
			e.stop()
			if err := e.srv.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// fillDisk writes a file on the filesystem of dir until no byte more fits,
// and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 4096, 1} {
		b := make([]byte, chunk)
		for {
			if _, err := f.Write(b); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	if n, err := diskspace.Free(dir); err != nil || n != 0 {
		t.Fatalf("after filling, %d bytes free (%v), want 0", n, err)
	}
	return p
}

// smallDiskEnv marks the run of a test inside its own mount namespace.
const smallDiskEnv = "GRASP_TEST_SMALL_DISK"

// smallDisk gives the test a filesystem of size bytes: a tmpfs mounted in
// a mount namespace of its own, so the mount ends with the process however
// it ends and no other test sees it. The test binary runs the calling test
// again under unshare(1): as root in a new mount namespace (CI runs as
// root), otherwise also in a new user namespace where it is root. In that
// run smallDisk mounts the tmpfs and returns its path; in the calling run
// it returns "" once the inner run passed, and fails the test with the
// inner run's output when it did not. Without unshare or namespaces the
// test fails saying so; it never skips.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	if os.Getenv(smallDiskEnv) != "" {
		dir := t.TempDir()
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
			t.Fatalf("mount a tmpfs at %s in the test's mount namespace: %v", dir, err)
		}
		t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
		return dir
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("this test mounts a small tmpfs in a mount namespace of its own and needs unshare(1) (util-linux): %v", err)
	}
	args := []string{"--mount", "--propagation", "private"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user"}, args...)
	}
	args = append(args, os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	if dl, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout", time.Until(dl).Round(time.Second).String())
	}
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), smallDiskEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the test in its own mount namespace (%s %s) failed: %v\n%s", unshare, strings.Join(args, " "), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the test did not run in its own mount namespace:\n%s", out)
	}
	return ""
}
