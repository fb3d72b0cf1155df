package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/nbd-wtf/go-nostr"
)

// TestAdminStatusWhileServing: `grasp admin status` asks the running server
// (its data dir is locked by badger) over the loopback metrics listener and
// shows the hosted repository and what its purgatory holds, by kind.
func TestAdminStatusWhileServing(t *testing.T) {
	metricsPort := testkit.FreePort(t)
	in := newInstance(t, fmt.Sprintf("[metrics]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", metricsPort))
	startServer(t, in)

	owner := newKey(t)
	repo := newGitRepo(t)
	sha := repo.commit(t, "first")
	ok, msg := publishOK(t, in.Relay(), announcement(t, owner, in, "status-repo", sha))
	expectPurgatoryOK(t, in, "announcement", ok, msg)
	ok, msg = publishOK(t, in.Relay(), state(t, owner, "status-repo", sha, 0))
	expectPurgatoryOK(t, in, "state", ok, msg)

	code, out, errOut := runGrasp(t, t.TempDir(), nil, nil, "admin", "status", "--config", in.Config)
	if code != 0 {
		t.Fatalf("admin status = %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"repositories: 1 (private, GRASP-08: 0)\n", "kind 30617: 1 held, oldest ", "kind 30618: 1 held, oldest ", "placeholders (refs/nostr/<id> awaiting their PR): 0", "hunter: "} {
		if !strings.Contains(out, want) {
			t.Errorf("admin status lacks %q:\n%s", want, out)
		}
	}

	// Without a running server the command says so and fails.
	other := newInstance(t, fmt.Sprintf("[metrics]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", testkit.FreePort(t)))
	if code, _, errOut := runGrasp(t, t.TempDir(), nil, nil, "admin", "status", "--config", other.Config); code != 1 || !strings.Contains(errOut, "is the server running?") {
		t.Errorf("admin status without a server = %d %q", code, errOut)
	}
}

// TestAdminIntegrityCheckRepairsMovedRefs: refs moved behind the server's
// back (a branch deleted, a rogue one added, straight in the bare repo) are
// reported against the signed state and, with --repair, realigned to it;
// a bare repo nobody announced is reported and left alone.
func TestAdminIntegrityCheckRepairsMovedRefs(t *testing.T) {
	metricsPort := testkit.FreePort(t)
	in := newInstance(t, fmt.Sprintf("[metrics]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", metricsPort))
	startServer(t, in)
	owner := newKey(t)
	const d = "drifting"
	repo := newGitRepo(t)
	sha := repo.commit(t, "first")
	ann := announcement(t, owner, in, d, sha)
	st := state(t, owner, d, sha, 0)
	for _, evt := range []*nostr.Event{ann, st} {
		ok, msg := publishOK(t, in.Relay(), evt)
		expectPurgatoryOK(t, in, "event", ok, msg)
	}
	if out, err := repo.push(cloneURL(in, owner, d), sha); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	waitServed(t, in, ann.ID, st.ID)

	coord := "30617:" + owner.PK + ":" + d
	check := func(args ...string) (int, string) {
		t.Helper()
		code, out, errOut := runGrasp(t, t.TempDir(), nil, nil, append([]string{"admin", "integrity-check", "--config", in.Config}, args...)...)
		if errOut != "" {
			t.Logf("stderr: %s", errOut)
		}
		return code, out
	}
	if code, out := check(); code != 0 || !strings.Contains(out, "1 repositories checked, 0 finding(s)") {
		t.Fatalf("integrity-check of a healthy server = %d\n%s", code, out)
	}

	// Behind the server's back.
	bare := filepath.Join(in.DataDir, "git", owner.Npub, d+".git")
	moveRefs := func() {
		t.Helper()
		for _, args := range [][]string{{"update-ref", "refs/heads/rogue", sha}, {"update-ref", "-d", "refs/heads/main"}} {
			if out, err := exec.Command("git", append([]string{"-C", bare}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
	}
	moveRefs()
	ghostOwner := newKey(t)
	if out, err := exec.Command("git", "init", "--quiet", "--bare", filepath.Join(in.DataDir, "git", ghostOwner.Npub, "ghost.git")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}

	code, out := check()
	for _, want := range []string{"PROBLEM " + coord + " refs-differ-from-state: refs differ from state " + st.ID,
		"PROBLEM 30617:" + ghostOwner.PK + ":ghost no-announcement"} {
		if !strings.Contains(out, want) {
			t.Errorf("integrity-check lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || !strings.Contains(out, "2 repositories checked, 2 finding(s)") {
		t.Errorf("integrity-check with findings = %d, want 1 and the two repositories counted:\n%s", code, out)
	}

	code, out = check("--repair", "--repo", coord)
	if code != 0 || !strings.Contains(out, "REPAIRED "+coord+" refs-differ-from-state") || strings.Contains(out, "ghost") {
		t.Errorf("integrity-check --repair --repo %s = %d\n%s", coord, code, out)
	}
	if got := repo.must(t, "ls-remote", cloneURL(in, owner, d)); !strings.Contains(got, sha+"\trefs/heads/main") || strings.Contains(got, "rogue") {
		t.Errorf("refs after the repair:\n%s\nwant main at %s and no rogue branch", got, sha)
	}
	if code, out := check("--repo", coord); code != 0 || !strings.Contains(out, "0 finding(s)") {
		t.Errorf("integrity-check after the repair = %d\n%s", code, out)
	}
	// The unannounced repo is reported, never deleted or guessed at.
	if code, out := check("--repair"); code != 1 || !strings.Contains(out, "PROBLEM 30617:"+ghostOwner.PK+":ghost no-announcement") {
		t.Errorf("integrity-check --repair with an unannounced repo = %d\n%s", code, out)
	}
}

// TestAdminBackupRefusals: `grasp admin backup` names why it cannot back up
// (no server answering, metrics off, a DEST that holds files or lies in the
// data dir, --offline without a data dir) and leaves nothing behind.
func TestAdminBackupRefusals(t *testing.T) {
	in := newInstance(t, fmt.Sprintf("[metrics]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", testkit.FreePort(t)))
	if err := os.MkdirAll(in.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "backup")
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	off := newInstance(t, "")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no server", []string{"--config", in.Config, dest}, 1, "is the server running?"},
		{"metrics off", []string{"--config", off.Config, dest}, 1, "metrics.enabled is false"},
		{"DEST not empty", []string{"--config", in.Config, full}, 1, "not empty"},
		{"DEST in the data dir", []string{"--config", in.Config, filepath.Join(in.DataDir, "b")}, 1, "inside the data dir"},
		{"offline without a store", []string{"--config", in.Config, "--offline", dest}, 1, "is not a grasp data dir"},
		{"no DEST", []string{"--config", in.Config}, 2, "usage: grasp admin backup"},
	} {
		code, _, errOut := runGrasp(t, t.TempDir(), nil, nil, append([]string{"admin", "backup"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d %q, want %d and %q", c.name, code, errOut, c.code, c.want)
		}
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("a refused backup left %s: %v", dest, err)
	}
	if b, err := os.ReadFile(filepath.Join(full, "keep")); err != nil || string(b) != "mine" {
		t.Errorf("a refused backup touched DEST's file: %q %v", b, err)
	}
}
