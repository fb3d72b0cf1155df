package git

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Audit F09d: the hunter's git ran with the server's environment. Under
// http_proxy it sent the request to the proxy, which resolves the name
// itself and voids the address pin; global config (http.proxy,
// url.*.insteadOf) and ~/.netrc applied too. Here every one of them points
// at a canary: the fetch still goes straight to the source, the canary sees
// nothing, and no credential of the operator's is offered to the source.
func TestAbuse_F09d_FetchIgnoresProxiesConfigAndNetrc(t *testing.T) {
	ts := newTestStore(t)
	_, srcURL, _, x := pushedRepo(t, ts, "proj")
	dst, _ := ts.newRepo("proj")
	repo := ref(dst, "proj")

	var canary atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		canary.Add(1)
		http.Error(w, "canary", http.StatusBadGateway)
	}))
	defer proxy.Close()
	// The source wants credentials under /private/: what curl would send
	// from ~/.netrc shows up here.
	var authSeen atomic.Int64
	source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/private/") {
			if r.Header.Get("Authorization") != "" {
				authSeen.Add(1)
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		ts.h.ServeHTTP(w, r)
	}))
	defer source.Close()
	src := source.URL + strings.TrimPrefix(srcURL, ts.srv.URL)

	home := t.TempDir()
	gitconfig := "[http]\n\tproxy = " + proxy.URL + "\n[url \"" + proxy.URL + "/\"]\n\tinsteadOf = " + source.URL + "/\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine 127.0.0.1 login operator password secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	for _, k := range []string{"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("no_proxy", "")
	t.Setenv("NO_PROXY", "")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "http.proxy")
	t.Setenv("GIT_CONFIG_VALUE_0", proxy.URL)

	stderr, err := ts.repos.Fetch(context.Background(), repo, FetchSpec{URL: src, OIDs: []string{x}})
	if err != nil {
		t.Errorf("fetch under a hostile environment: %v\n%s", err, stderr)
	}
	if has, _ := ts.repos.HasObjects(context.Background(), repo, []string{x}); !has[x] {
		t.Error("the commit did not arrive from the source")
	}
	private := source.URL + "/private" + strings.TrimPrefix(srcURL, ts.srv.URL)
	_, _ = ts.repos.Fetch(context.Background(), repo, FetchSpec{URL: private, OIDs: []string{strings.Repeat("ab", 20)}})
	if n := canary.Load(); n != 0 {
		t.Errorf("the proxy canary saw %d requests", n)
	}
	if n := authSeen.Load(); n != 0 {
		t.Errorf("the source was offered the operator's ~/.netrc credentials %d times", n)
	}
}
