package pages

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// F32: dot-dot and NUL paths in tree/ and blob/ views answered 500 and
// logged a WARN with the visitor's path per request (git refused the
// pathspec, so nothing leaked). They are now a plain 404, logged at no
// level an operator reads, like any other missing path.
func TestAbuse_F32_DotDotAndNULPathsAre404(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	var logged bytes.Buffer
	r.pages.log = hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Info})
	owner := newKey(t)
	r.announce(owner, "dots", 100, nil)
	r.push(owner, "dots", workTree(t, map[string]string{"docs/a.md": "a\n", "b.txt": "b\n"}, "first"))
	base := git.RepoURLPath(nip34.Npub(owner.PK), "dots")
	for _, p := range []string{
		"/tree/main/%2e%2e", "/tree/main/docs/%2e%2e/%2e%2e", "/blob/main/%2e%2e%2fetc%2fpasswd", "/blob/main/docs/..%2f..%2fb.txt",
		"/tree/main/%2e", "/blob/main/b.txt%00", "/tree/main/docs%00x", "/blob/main/%00",
	} {
		status, body := r.get(base + p)
		if status != http.StatusNotFound || !strings.Contains(body, "Not found") {
			t.Errorf("%s: %d, want 404", p, status)
		}
	}
	if logged.Len() != 0 {
		t.Errorf("hostile paths were logged:\n%s", logged.String())
	}
	// The real paths still work.
	if status, _ := r.get(base + "/blob/main/docs/a.md"); status != http.StatusOK {
		t.Errorf("a real file: %d", status)
	}
}

// TestAbuse_F32_PagesCannotBeFramed: every page says it may not be framed,
// in the CSP and in X-Frame-Options for older browsers.
func TestAbuse_F32_PagesCannotBeFramed(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	for _, p := range []string{"/", "/nothing-here"} {
		resp, err := http.Get(r.server.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q lacks frame-ancestors 'none'", p, csp)
		}
		if xfo := resp.Header.Get("X-Frame-Options"); xfo != "DENY" {
			t.Errorf("%s: X-Frame-Options %q, want DENY", p, xfo)
		}
	}
}
