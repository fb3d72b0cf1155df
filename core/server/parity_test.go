package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
)

// gitworkshop creates a repository by publishing the 30617, awaiting its OK,
// then the 30618, then POSTing the pack to every clone URL at once, with no
// readiness poll (field-2026-09.md §3.5): the bare repository must answer
// git the moment the announcement's OK arrives. Each check runs right after
// the OK is read, nothing waited for in between, on three repositories
// (issue 10 part 4).
func TestG10_BareRepoAnswersGitWhenTheAnnouncementOKArrives(t *testing.T) {
	e := newEnv(t, nil)
	owner := newKey(t)
	w := newWork(t)
	tip := w.commit("first")
	cl := e.dial()
	for _, d := range []string{"wk-1", "wk-2", "wk-3"} {
		url := e.cloneURL(owner, d)
		// Control: before the announcement nothing is served there.
		if code := infoRefsStatus(t, url); code != http.StatusNotFound {
			t.Fatalf("%s before its announcement: info/refs %d, want 404", d, code)
		}
		cl.mustAccept(e.announcement(owner, d), purg)
		// isomorphic-git's push starts with the receive-pack advertisement.
		resp, err := http.Get(url + "/info/refs?service=git-receive-pack")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-git-receive-pack-advertisement" {
			t.Fatalf("%s right after the announcement's OK: receive-pack advertisement %d %q, want 200", d, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		cl.mustAccept(e.state(owner, d, map[string]string{"refs/heads/main": tip}, "refs/heads/main"), purg)
		if out, err := w.push(url, "main:refs/heads/main"); err != nil {
			t.Fatalf("%s: push right after the state's OK: %v\n%s", d, err, out)
		}
		if got := lsRemote(t, url)["refs/heads/main"]; got != tip {
			t.Fatalf("%s: main is %q after the push, want %s", d, got, tip)
		}
	}
}

// The relay's own key (relay.pubkey) publishes CI results for repositories
// it does not host and a stranger's copy of the same event is refused: the
// rule is wired into the server's pipeline (issue 10 part 6).
func TestG10_RelayKeyEventsAcceptedByTheServer(t *testing.T) {
	relayKey := newKey(t)
	e := newEnv(t, func(c *config.Config) { c.Relay.Pubkey = relayKey.PK })
	stranger := newKey(t)
	cl := e.dial()
	tags := nostr.Tags{{"a", "30617:" + stranger.PK + ":not-hosted-here"}}
	cl.mustReject(e.sign(stranger, 9842, tags, "job passed"), "")
	ci := e.sign(relayKey, 9842, tags, "job passed")
	cl.mustAccept(ci, "")
	if !cl.served(ci.ID) {
		t.Fatal("the relay key's accepted CI event is not served")
	}
}

// NDK reconciles ids over NIP-77 and then fetches them in one filter
// without a limit: 521 ids in the field report, where default_limit (500)
// silently dropped 21. Through the whole server (gate, relay, the real
// store) every named event comes back (issue 10 part 4).
func TestG10_IDsOnlyREQWith521IDsEndToEnd(t *testing.T) {
	relayKey := newKey(t) // its notes are accepted without a repository
	e := newEnv(t, func(c *config.Config) { c.Relay.Pubkey = relayKey.PK })
	cl := e.dial()
	const n = 521
	want := map[string]bool{}
	var idList []string
	for i := range n {
		evt := e.sign(relayKey, 1, nil, "note")
		evt.CreatedAt -= nostr.Timestamp(i) // distinct, all in the past
		if err := evt.Sign(relayKey.SK); err != nil {
			t.Fatal(err)
		}
		want[evt.ID] = true
		idList = append(idList, evt.ID)
		cl.send("EVENT", evt) // pipelined, as a syncing client sends them
	}
	for range n {
		m := cl.next(func(m []jsonMsg) bool { return label(m) == "OK" })
		var ok bool
		unmarshal(m[2], &ok)
		if !ok {
			t.Fatalf("EVENT refused: %s", str(m[3]))
		}
	}
	got := cl.query(nostr.Filter{IDs: idList})
	if len(got) != n {
		t.Fatalf("ids-only REQ of %d ids without limit returned %d events", n, len(got))
	}
	for _, evt := range got {
		if !want[evt.ID] {
			t.Fatalf("unexpected event %s", evt.ID)
		}
	}
	// Control: without ids, a filter that sets no limit still gets
	// default_limit.
	if got := cl.query(nostr.Filter{Authors: []string{relayKey.PK}, Kinds: []int{1}}); len(got) != config.DefaultLimits().DefaultLimit {
		t.Fatalf("authors+kinds REQ without limit returned %d events, want default_limit %d", len(got), config.DefaultLimits().DefaultLimit)
	}
}

// The other side of the order: when the bare repository cannot be made,
// the announcement is not kept and the client gets OK false "error:", so an
// OK true always means the repository answers git. Once the cause is gone
// the same announcement is accepted (not "duplicate: in purgatory") and the
// repository answers (issue 10 part 4).
func TestG10_AnnouncementRefusedWhenItsRepoCannotBeMade(t *testing.T) {
	e := newEnv(t, nil)
	owner := newKey(t)
	dir, err := e.srv.Repos().Path(owner.repo("blocked"))
	if err != nil {
		t.Fatal(err)
	}
	ownerDir := filepath.Dir(dir)
	// A file where the owner's directory must go: creating the repo fails.
	if err := os.MkdirAll(filepath.Dir(ownerDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ownerDir, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := e.dial()
	ann := e.announcement(owner, "blocked")
	cl.mustReject(ann, "error:")
	if code := infoRefsStatus(t, e.cloneURL(owner, "blocked")); code != http.StatusNotFound {
		t.Fatalf("info/refs after the refused announcement: %d, want 404", code)
	}
	// Control: the cause removed, the same event is held and served by git.
	if err := os.Remove(ownerDir); err != nil {
		t.Fatal(err)
	}
	cl.mustAccept(ann, purg)
	if code := infoRefsStatus(t, e.cloneURL(owner, "blocked")); code != http.StatusOK {
		t.Fatalf("info/refs right after the OK: %d, want 200", code)
	}
}
