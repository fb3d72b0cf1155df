package main

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestAdminBackupFromRelativeDataDir: the README's own setup, a config
// naming data_dir "data" run from its directory, backs up while serving
// (it failed with "Rel: can't make .../data/git/... relative to ./data",
// exit 1, and the server logged nothing), and the backup verifies: every
// file against its hash manifest, every event's id and signature after a
// restore into a scratch dir, the repository's refs, git fsck (issue 26).
// A backup whose pack was damaged afterwards fails --verify, naming the
// file. A refused admin request is logged at warn.
func TestAdminBackupFromRelativeDataDir(t *testing.T) {
	dir := t.TempDir()
	port, metricsPort := testkit.FreePort(t), testkit.FreePort(t)
	in := instance{Port: port, DataDir: filepath.Join(dir, "data"), Config: filepath.Join(dir, "grasp.toml")}
	conf := fmt.Sprintf("[server]\nlisten = \"127.0.0.1:%d\"\npublic_url = \"http://127.0.0.1:%d\"\ndata_dir = \"data\"\n\n"+
		"[log]\nlevel = \"info\"\nformat = \"json\"\n\n[metrics]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", port, port, metricsPort)
	if err := os.WriteFile(in.Config, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, dir, "serve", "--config", "grasp.toml")
	p.waitLog(t, func(m logLine) bool { return m.Msg() == "grasp listening" })

	owner := newKey(t)
	repo := newGitRepo(t)
	sha := repo.commit(t, "first")
	ann, st := announcement(t, owner, in, "rel", sha), state(t, owner, "rel", sha, 0)
	ok, msg := publishOK(t, in.Relay(), ann)
	expectPurgatoryOK(t, in, "announcement", ok, msg)
	ok, msg = publishOK(t, in.Relay(), st)
	expectPurgatoryOK(t, in, "state", ok, msg)
	if out, err := repo.push(cloneURL(in, owner, "rel"), sha); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	waitServed(t, in, ann.ID, st.ID)

	code, out, errOut := runGrasp(t, dir, nil, nil, "admin", "backup", "--config", "grasp.toml", "bk")
	if code != 0 || !strings.Contains(out, "1 repositories") {
		t.Fatalf("admin backup with data_dir = \"data\" = %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	bk := filepath.Join(dir, "bk")
	for _, f := range []string{"grasp-backup.json", "grasp-backup.sha256", "grasp-backup-refs.json"} {
		if _, err := os.Stat(filepath.Join(bk, f)); err != nil {
			t.Errorf("the backup lacks %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(bk, "admin.token")); err == nil {
		t.Error("the backup carries the admin token")
	}

	code, out, errOut = runGrasp(t, dir, nil, nil, "admin", "backup", "--config", "grasp.toml", "--verify", "bk")
	if code != 0 || !strings.Contains(out, "0 problem(s)") || !strings.Contains(out, "1 repositories their refs and git fsck") {
		t.Fatalf("--verify of a good backup = %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if m := regexp.MustCompile(`(\d+) events their ids and signatures`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Fatalf("--verify checked no events:\n%s", out)
	}

	// Damage the pack the push left (one byte in its middle).
	var pack string
	filepath.WalkDir(filepath.Join(bk, "git"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".pack") {
			pack = p
		}
		return nil
	})
	if pack == "" {
		t.Fatal("no pack in the backup")
	}
	b, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	os.Chmod(pack, 0o644)
	if err := os.WriteFile(pack, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(bk, pack)
	code, out, errOut = runGrasp(t, dir, nil, nil, "admin", "backup", "--config", "grasp.toml", "--verify", "bk")
	t.Logf("--verify of the damaged backup:\n%s", out)
	if code != 1 || !strings.Contains(out, "PROBLEM "+filepath.ToSlash(rel)+" is not the file backed up") || !strings.Contains(out, "git fsck") {
		t.Fatalf("--verify of a damaged backup = %d, want 1 naming %s and git fsck\nstdout %s\nstderr %s", code, rel, out, errOut)
	}

	// An admin request without the token is refused, and the server says so.
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/admin/backup", metricsPort), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("backup without the token: %d", resp.StatusCode)
	}
	p.waitLog(t, func(m logLine) bool {
		return m.Msg() == "admin request refused" && m.Str("@level") == "warn" && strings.Contains(m.Str("reason"), "admin token")
	})
}
