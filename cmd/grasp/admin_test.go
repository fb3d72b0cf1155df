package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestAdminStatusWhileServing: `grasp admin status` asks the running server
// (its data dir is locked by badger) over the loopback metrics listener and
// shows the hosted repository and what its purgatory holds, by kind.
func TestAdminStatusWhileServing(t *testing.T) {
	metricsPort := freePort(t)
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
	for _, want := range []string{"repositories: 1\n", "kind 30617: 1 held, oldest ", "kind 30618: 1 held, oldest ", "placeholders (refs/nostr/<id> awaiting their PR): 0", "hunter: "} {
		if !strings.Contains(out, want) {
			t.Errorf("admin status lacks %q:\n%s", want, out)
		}
	}

	// Without a running server the command says so and fails.
	other := newInstance(t, fmt.Sprintf("[metrics]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n", freePort(t)))
	if code, _, errOut := runGrasp(t, t.TempDir(), nil, nil, "admin", "status", "--config", other.Config); code != 1 || !strings.Contains(errOut, "is the server running?") {
		t.Errorf("admin status without a server = %d %q", code, errOut)
	}
}
