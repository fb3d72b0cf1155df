package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
)

// TestBasePath_ServerEndToEnd: with public_url http://127.0.0.1:port/git
// the whole GRASP-01 flow (announcement and state over the websocket at
// /git, push and clone at /git/<npub>/<d>.git, the repository page) works
// under the path, and the root answers nothing (issue 10 part 5).
func TestBasePath_ServerEndToEnd(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Server.PublicURL += "/git" })
	root := strings.TrimSuffix(e.base, "/git")
	if !strings.HasSuffix(e.base, "/git") || !strings.HasSuffix(e.ws, "/git") {
		t.Fatalf("public URL %s, relay URL %s: want both under /git", e.base, e.ws)
	}
	a := newKey(t)
	w := newWork(t)
	x := w.commit("under a path")
	e.release(a, "repo", w, x)
	if got := lsRemote(t, e.cloneURL(a, "repo")); got["refs/heads/main"] != x {
		t.Fatalf("ls-remote under /git: %v, want main at %s", got, x)
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(e.cloneURL(a, "repo")); code != 200 || !strings.Contains(body, "under a path") {
		t.Errorf("repository page under /git: %d", code)
	}
	rootClone := root + "/" + a.Npub + "/repo.git"
	for _, u := range []string{root + "/", rootClone, rootClone + "/info/refs?service=git-upload-pack"} {
		if code, _ := get(u); code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404: the root is not grasp's", u, code)
		}
	}
	if _, err := gitRun(t, t.TempDir(), "ls-remote", rootClone); err == nil {
		t.Error("git reached the repository at the root")
	}
}
