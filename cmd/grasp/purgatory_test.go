package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldAtLoad returns the `held` count the purgatory logged when it loaded.
func heldAtLoad(t *testing.T, p *proc) int {
	t.Helper()
	m := p.waitLog(t, func(m logLine) bool { return m.Msg() == "purgatory loaded" })
	n, ok := m["held"].(float64)
	if !ok {
		t.Fatalf("purgatory loaded record without a held count: %v", m)
	}
	return int(n)
}

func expectNotServed(t *testing.T, in instance, what string, ids ...string) {
	t.Helper()
	if got := mustServed(t, in.Relay(), ids...); len(got) > 0 {
		t.Errorf("%s: held events served: %v", what, got)
	}
}

func expectPurgatoryOK(t *testing.T, in instance, what string, ok bool, msg string) {
	t.Helper()
	if !ok || !strings.HasPrefix(msg, "purgatory:") {
		t.Fatalf("%s: OK %v %q, want OK true \"purgatory: ...\" (G01-P1)", what, ok, msg)
	}
}

// TestG01P_PurgatorySurvivesKill9: announcement and state held in
// purgatory (G01-P1, P2, P3) are still held after kill -9 and are released
// by the push that brings their git data; a held state still expires after
// a kill -9 (G01-P5), and the push that comes too late is refused.
func TestG01P_PurgatorySurvivesKill9(t *testing.T) {
	t.Run("HeldUntilPush", func(t *testing.T) {
		in := newInstance(t, "")
		p := startServer(t, in)
		owner := newKey(t)
		const d = "held-repo"
		repo := newGitRepo(t)
		sha := repo.commit(t, "first")

		ann := announcement(t, owner, in, d, sha)
		ok, msg := publishOK(t, in.Relay(), ann)
		expectPurgatoryOK(t, in, "announcement", ok, msg)
		st := state(t, owner, d, sha, 0)
		ok, msg = publishOK(t, in.Relay(), st)
		expectPurgatoryOK(t, in, "state", ok, msg)
		expectNotServed(t, in, "before the crash", ann.ID, st.ID)
		checkInfoRefs(t, in, owner, d, "before the crash")

		p.kill9(t)
		p = startServer(t, in)
		if n := heldAtLoad(t, p); n != 2 {
			t.Errorf("purgatory held %d events after kill -9 and restart, want 2", n)
		}
		expectNotServed(t, in, "after the restart", ann.ID, st.ID)
		checkInfoRefs(t, in, owner, d, "after the restart")
		if ok, msg := publishOK(t, in.Relay(), st); !ok || msg != "duplicate: in purgatory" {
			t.Errorf("state resent after the restart: OK %v %q, want OK true \"duplicate: in purgatory\" (G01-P6)", ok, msg)
		}

		if out, err := repo.push(cloneURL(in, owner, d), sha); err != nil {
			t.Fatalf("push of the held state's commit after the restart: %v\n%s", err, out)
		}
		waitServed(t, in, ann.ID, st.ID)
		if out := repo.must(t, "ls-remote", cloneURL(in, owner, d), "refs/heads/main"); !strings.HasPrefix(out, sha) {
			t.Errorf("ls-remote main = %q, want %s", out, sha)
		}
	})

	t.Run("ExpiresAfterRestart", func(t *testing.T) {
		in := newInstance(t, "")
		p := startServer(t, in)
		owner := newKey(t)
		const d = "expiring-repo"
		repo, _, st1 := promoted(t, in, owner, d)
		first := repo.must(t, "rev-parse", "HEAD")
		if code := p.stop(t, syscall.SIGTERM); code != 0 {
			t.Fatalf("exit code after SIGTERM = %d", code)
		}

		// purgatory.ttl is read at start-up only: restart with a short one.
		in.writeConfig(t, "[purgatory]\nttl = \"3s\"\nsweep_interval = \"200ms\"\n")
		p = startServer(t, in)
		second := repo.commit(t, "second")
		st2 := state(t, owner, d, second, st1.CreatedAt+1)
		ok, msg := publishOK(t, in.Relay(), st2)
		expectPurgatoryOK(t, in, "second state", ok, msg)
		heldAt := time.Now()
		p.kill9(t)

		p = startServer(t, in)
		if n := heldAtLoad(t, p); n != 1 {
			t.Errorf("purgatory held %d events after kill -9 and restart, want 1", n)
		}
		p.waitLog(t, func(m logLine) bool {
			return m.Msg() == "expired from purgatory without git data" && m.Str("id") == st2.ID
		})
		t.Logf("held state expired %v after its OK (ttl 3s, sweep 200ms, one kill -9 in between)", time.Since(heldAt).Round(10*time.Millisecond))

		out, err := repo.push(cloneURL(in, owner, d), second)
		if err == nil {
			t.Fatalf("push after the held state expired was accepted:\n%s", out)
		}
		if i := strings.Index(out, "authorisation failed"); i < 0 {
			t.Errorf("rejected push gives no readable reason:\n%s", out)
		} else {
			t.Logf("late push refused: %s", strings.SplitN(out[i:], "\n", 2)[0])
		}
		expectNotServed(t, in, "after expiry", st2.ID)
		if got := mustServed(t, in.Relay(), st1.ID); !got[st1.ID] {
			t.Error("the served state vanished")
		}
		if out := repo.must(t, "ls-remote", cloneURL(in, owner, d), "refs/heads/main"); !strings.HasPrefix(out, first) {
			t.Errorf("ls-remote main after the refused push = %q, want %s", out, first)
		}
	})
}

// checkInfoRefs: the bare repo of a held announcement exists, so the first
// push can land (G01-P2).
func checkInfoRefs(t *testing.T, in instance, k key, d, when string) {
	t.Helper()
	code, hdr, body := httpGet(t, cloneURL(in, k, d)+"/info/refs?service=git-upload-pack", nil)
	if code != 200 || hdr.Get("Content-Type") != "application/x-git-upload-pack-advertisement" ||
		!strings.HasPrefix(string(body), "001e# service=git-upload-pack") {
		t.Errorf("%s: info/refs = %d %q %q, want 200 and an upload-pack advertisement", when, code, hdr.Get("Content-Type"), body[:min(len(body), 40)])
	}
}
