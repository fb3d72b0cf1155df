package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// signingProxy stands where a credential helper that signs every request
// stands (git >= 2.46 with authtype, e.g. Buzz's git-credential-nostr):
// each request reaches e with a NIP-98 token of k whose `u` is the
// request's exact URL (query included) and whose `method` is method(r).
// It records the methods it signed.
func signingProxy(t *testing.T, e *testServer, k key, method func(*http.Request) string) (string, func() []string) {
	t.Helper()
	target, err := url.Parse(e.base)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var signed []string
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		r := pr.In
		u := e.base + r.URL.EscapedPath()
		if r.URL.RawQuery != "" {
			u += "?" + r.URL.RawQuery
		}
		m := method(r)
		pr.SetURL(target)
		pr.Out.Header.Set("Authorization", e.token(k, u, m))
		mu.Lock()
		signed = append(signed, r.Method+" "+m)
		mu.Unlock()
	}}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), signed...)
	}
}

// Part 4: per-request tokens, each for the exact URL and method of one
// request, open a private repository to stock git: a clone (GET info/refs,
// POST git-upload-pack) and a push (GET info/refs, POST git-receive-pack)
// through a proxy that signs every request so. The same per-request
// tokens with the wrong method are refused.
func TestG08_PerRequestTokensCloneAndPush(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner := newKey(t)
	p := e.releasePrivate(owner, "vault")
	path := nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"}.URLPath()
	proxy, signed := signingProxy(t, e, owner, func(r *http.Request) string { return r.Method })
	dst := t.TempDir()
	if out, err := gitRun(t, dst, "clone", "-q", proxy+path, "c"); err != nil {
		t.Fatalf("clone with per-request tokens: %v\n%s", err, out)
	}
	if head := mustGit(t, dst+"/c", "rev-parse", "HEAD"); head != p.tip {
		t.Fatalf("cloned %s, want %s", head, p.tip)
	}
	tip := p.work.commit("secret v2")
	e.clk.Advance(time.Second)
	p.conn.mustAccept(e.state(owner, "vault", map[string]string{"refs/heads/main": tip}, "refs/heads/main"), "")
	if out, err := gitRun(t, p.work.dir, "push", "--porcelain", proxy+path, "main:refs/heads/main"); err != nil {
		t.Fatalf("push with per-request tokens: %v\n%s", err, out)
	}
	out, err := e.gitAs(owner, p.clone, t.TempDir(), "ls-remote", p.clone)
	if err != nil || !strings.Contains(out, tip+"\trefs/heads/main") {
		t.Fatalf("after the push: %v\n%s", err, out)
	}
	got := strings.Join(signed(), ",")
	for _, want := range []string{"GET GET", "POST POST"} {
		if !strings.Contains(got, want) {
			t.Fatalf("signed %s: no %q request", got, want)
		}
	}
	// a per-request token must name the request's method: POST requests
	// signed as GET for their exact URL are refused
	wrong, _ := signingProxy(t, e, owner, func(*http.Request) string { return http.MethodGet })
	if out, err := gitRun(t, t.TempDir(), "clone", "-q", wrong+path, "c"); err == nil {
		t.Fatalf("a POST with a GET token for its exact URL was accepted:\n%s", out)
	}
}
