package relay

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testwait"
)

// TestBasePath_EverythingLivesUnderThePath: with public_url
// http://host/git the websocket, NIP-11, git and pages are served under
// /git with the path stripped, and the root is left to other sites (issue
// 10 part 5). Each check has its positive control at the base path.
func TestBasePath_EverythingLivesUnderThePath(t *testing.T) {
	tr := startRelay(t, Options{PublicURL: listenBase + "/git", Name: "base path test"})
	root, base := tr.base, tr.base+"/git"
	if tr.srv.RelayURL() != tr.ws+"/git" {
		t.Fatalf("relay URL %q, want %s/git", tr.srv.RelayURL(), tr.ws)
	}
	var gitPaths, pagePaths []string
	tr.srv.HandleGit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gitPaths = append(gitPaths, r.URL.EscapedPath())
		w.WriteHeader(http.StatusTeapot)
	}))
	tr.srv.HandlePages(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pagePaths = append(pagePaths, r.URL.EscapedPath())
		w.WriteHeader(http.StatusAccepted)
	}))

	// NIP-11 at the path, not at the root.
	for _, p := range []string{"/git", "/git/"} {
		resp, body := get(t, http.MethodGet, root+p, nostrJSON)
		var doc map[string]any
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &doc) != nil || doc["name"] != "base path test" {
			t.Errorf("NIP-11 at %s: %d %.80q", p, resp.StatusCode, body)
		}
		if doc["icon"] != base+"/icon.png" {
			t.Errorf("NIP-11 icon %v, want %s/icon.png", doc["icon"], base)
		}
	}
	if resp, _ := get(t, http.MethodGet, root+"/", nostrJSON); resp.StatusCode != http.StatusNotFound || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("NIP-11 at the root: %d (CORS %q), want a plain 404: the root is not ours", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}

	// git and pages under the path, with the path stripped.
	const repo = "/npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq8yaf0w/my%20repo.git"
	get(t, http.MethodGet, base+repo+"/info/refs?service=git-upload-pack", nil)
	get(t, http.MethodGet, base+repo, nil)
	get(t, http.MethodGet, base, nil)
	for _, p := range []string{repo + "/info/refs", "/", "/icon.png", "/gitx" + repo + "/info/refs"} {
		if resp, _ := get(t, http.MethodGet, root+p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s at the root = %d, want 404", p, resp.StatusCode)
		}
	}
	if strings.Join(gitPaths, " ") != repo+"/info/refs" {
		t.Errorf("git handler saw %q, want only %s/info/refs", gitPaths, repo)
	}
	if strings.Join(pagePaths, " ") != repo+" /" {
		t.Errorf("pages saw %q, want the repository page and /", pagePaths)
	}

	// The websocket answers at the path, not at the root.
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Limit(t))
	defer cancel()
	if c, _, err := websocket.Dial(ctx, tr.ws+"/", nil); err == nil {
		c.CloseNow()
		t.Error("websocket accepted at the root")
	}
	c := dialRaw(t, tr.ws+"/git")

	// NIP-42: AUTH must name the relay URL with its path (the positive
	// control); the bare host is refused.
	k := newKey(t)
	protected := k.event(t, 1, nostr.Now().Time().Unix(), nostr.Tags{{"-"}}, "only mine")
	frame, _ := json.Marshal([]any{"EVENT", protected})
	c.send(string(frame))
	var challenge string
	c.readUntil(func(msg []json.RawMessage) bool {
		if label(msg) == "AUTH" {
			challenge = str(msg, 1)
		}
		return challenge != ""
	})
	auth := func(relay string) bool {
		evt := nostr.Event{Kind: nostr.KindClientAuthentication, CreatedAt: nostr.Now(),
			Tags: nostr.Tags{{"relay", relay}, {"challenge", challenge}}}
		if err := evt.Sign(k.SK); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{"AUTH", evt})
		c.send(string(b))
		var ok bool
		c.readUntil(func(msg []json.RawMessage) bool {
			if label(msg) == "OK" && str(msg, 1) == evt.ID {
				ok = string(msg[2]) == "true"
				return true
			}
			return false
		})
		return ok
	}
	if auth(tr.ws) {
		t.Error("AUTH naming the bare host accepted; the relay is at /git")
	}
	if !auth(tr.ws + "/git") {
		t.Fatal("AUTH naming the relay URL with its base path refused")
	}
	c.send(string(frame))
	c.readUntil(func(msg []json.RawMessage) bool {
		if label(msg) == "OK" && str(msg, 1) == protected.ID {
			if string(msg[2]) != "true" {
				t.Errorf("protected event after AUTH: %s", msg[3])
			}
			return true
		}
		return false
	})
}
