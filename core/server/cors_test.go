package server_test

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
)

// corsRecorder is a reverse proxy in front of a test server that keeps the
// CORS headers of every response it forwards, so real git traffic (clone,
// fetch, accepted and refused pushes) is checked as a browser would see it.
type corsRecorder struct {
	base string // the proxy's http://127.0.0.1:port
	mu   sync.Mutex
	seen []corsSeen
}

type corsSeen struct {
	method, path string
	status       int
	header       http.Header
}

func newCORSRecorder(t *testing.T, target string) *corsRecorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &corsRecorder{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		ModifyResponse: func(resp *http.Response) error {
			rec.mu.Lock()
			rec.seen = append(rec.seen, corsSeen{resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, resp.Header.Clone()})
			rec.mu.Unlock()
			return nil
		},
	}
	srv := &http.Server{Handler: proxy}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	rec.base = "http://" + ln.Addr().String()
	return rec
}

func (rec *corsRecorder) responses() []corsSeen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]corsSeen(nil), rec.seen...)
}

// wantCORS is GRASP-01's rule (grasp.md §2, C1-C3) with the header set
// browser git clients send (issue 25 part 6).
func wantCORS(t *testing.T, what string, h http.Header) {
	t.Helper()
	if got := h.Values("Access-Control-Allow-Origin"); len(got) != 1 || got[0] != "*" {
		t.Errorf("%s: Access-Control-Allow-Origin = %q, want exactly one \"*\"", what, got)
	}
	methods := corsItems(h.Get("Access-Control-Allow-Methods"))
	for _, m := range []string{"get", "post"} {
		if !methods[m] {
			t.Errorf("%s: Access-Control-Allow-Methods = %q lacks %s", what, h.Get("Access-Control-Allow-Methods"), strings.ToUpper(m))
		}
	}
	headers := corsItems(h.Get("Access-Control-Allow-Headers"))
	for _, need := range []string{"Content-Type", "Git-Protocol", "Authorization", "Accept", "Content-Encoding", "X-Requested-With", "X-Git-Request-Id"} {
		if !headers[strings.ToLower(need)] {
			t.Errorf("%s: Access-Control-Allow-Headers %q lacks %s", what, h.Get("Access-Control-Allow-Headers"), need)
		}
	}
	if h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("%s: allows credentials", what)
	}
}

func corsItems(v string) map[string]bool {
	out := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out[s] = true
		}
	}
	return out
}

// G01-C1..C4 and issue 25 part 6: every response of every path — NIP-11,
// NIP-05, pages, info/refs, upload-pack, receive-pack accepted and refused,
// GRASP-06 /prs/, OPTIONS — carries Access-Control-Allow-Origin *, methods
// with GET and POST, and the full header set, real git traffic included.
func TestG01C1_CORSOnEveryPath(t *testing.T) {
	op := newKey(t)
	e := newPRsEnv(t, func(c *config.Config) { c.Relay.Pubkey = op.PK })
	rec := newCORSRecorder(t, e.base)
	cl := e.dial()
	a, pr := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	cl.mustAccept(e.announcement(a, "repo"), purg)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	viaProxy := rec.base + "/" + a.Npub + "/repo.git"

	// receive-pack accepted (info/refs for receive-pack, then the POST).
	if out, err := w.push(viaProxy, "main:refs/heads/main"); err != nil {
		t.Fatalf("push through the proxy: %v\n%s", err, out)
	}
	// receive-pack refused: no state names this commit.
	w.commit("y")
	if out, err := w.push(viaProxy, "main:refs/heads/main"); err == nil || !strings.Contains(out, "authorisation failed") {
		t.Fatalf("push of an unsigned tip: err=%v\n%s", err, out)
	}
	// upload-pack: a clone.
	mustGit(t, t.TempDir(), "clone", "-q", viaProxy, "c")
	// GRASP-06: a PR's tip pushed to /prs/.
	evt := e.prEvent(pr, a, "repo", x, e.prsURL(pr, "repo"))
	if out, err := w.push(rec.base+"/prs/"+pr.Npub+"/repo.git", x+":refs/nostr/"+evt.ID); err != nil {
		t.Fatalf("push to /prs/: %v\n%s", err, out)
	}
	// NIP-11, NIP-05, pages (landing, repository, 404), OPTIONS anywhere.
	for _, r := range []struct{ method, path, accept string }{
		{"GET", "/", "application/nostr+json"},
		{"GET", "/nip11.json", ""},
		{"GET", "/.well-known/nostr.json?name=_", ""},
		{"GET", "/", "text/html"},
		{"GET", "/" + a.Npub + "/repo.git", "text/html"},
		{"GET", "/nope", "text/html"},
		{"OPTIONS", "/", ""},
		{"OPTIONS", "/" + a.Npub + "/repo.git/git-receive-pack", ""},
		{"OPTIONS", "/" + a.Npub + "/repo.git/info/refs", ""},
		{"OPTIONS", "/prs/" + pr.Npub + "/repo.git/git-receive-pack", ""},
		{"OPTIONS", "/.well-known/nostr.json", ""},
	} {
		req, _ := http.NewRequest(r.method, rec.base+r.path, nil)
		if r.accept != "" {
			req.Header.Set("Accept", r.accept)
		}
		if r.method == "OPTIONS" {
			req.Header.Set("Origin", "https://gitworkshop.dev")
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "content-type, git-protocol, authorization")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	kinds := map[string]bool{}
	receivePOSTs := 0
	for _, s := range rec.responses() {
		what := s.method + " " + s.path
		wantCORS(t, what, s.header)
		switch {
		case s.method == "OPTIONS":
			kinds["OPTIONS"] = true
		case strings.HasPrefix(s.path, "/prs/") && strings.HasSuffix(s.path, "/git-receive-pack"):
			kinds["prs receive-pack"] = true
		case strings.HasSuffix(s.path, "/info/refs"):
			kinds["info/refs"] = true
		case strings.HasSuffix(s.path, "/git-upload-pack"):
			kinds["upload-pack"] = true
		case strings.HasSuffix(s.path, "/git-receive-pack"):
			kinds["receive-pack"] = true
			if s.method == "POST" {
				receivePOSTs++
			}
		case s.path == "/.well-known/nostr.json":
			kinds["NIP-05"] = true
		case s.path == "/nip11.json":
			kinds["NIP-11"] = true
		default:
			kinds["page"] = true
		}
	}
	for _, k := range []string{"OPTIONS", "prs receive-pack", "info/refs", "upload-pack", "receive-pack", "NIP-05", "NIP-11", "page"} {
		if !kinds[k] {
			t.Errorf("no %s response was seen through the proxy", k)
		}
	}
	if receivePOSTs != 2 {
		t.Errorf("saw %d receive-pack POSTs to the hosted repository, want 2 (one accepted, one refused)", receivePOSTs)
	}
}
