package githttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// pushedRepo returns a repository whose main is one commit, pushed through
// the handler, plus that commit.
func pushedRepo(t *testing.T, ts *testServer, id string) (owner, url, work, x string) {
	t.Helper()
	owner, url = ts.newRepo(id)
	work = testkit.GitWork(t)
	x = testkit.Git(t, work, "rev-parse", "HEAD")
	ts.auth.addState(owner, id, state("s-"+id, 10, "ref: refs/heads/main", "refs/heads/main", x))
	testkit.Git(t, work, "push", "-q", url, "main")
	return owner, url, work, x
}

func TestG01G1a_CloneHasStateRefs(t *testing.T) {
	ts := newTestServer(t, Options{})
	_, url, _, x := pushedRepo(t, ts, "proj")
	clone := filepath.Join(t.TempDir(), "c")
	testkit.Git(t, "", "clone", "-q", url, clone)
	if got := testkit.Git(t, clone, "rev-parse", "HEAD"); got != x {
		t.Fatalf("clone HEAD = %s, want %s", got, x)
	}
}

func TestG01G1b_IdentifierWithSpaceAndEmoji(t *testing.T) {
	ts := newTestServer(t, Options{})
	id := "my repo 🚀"
	owner, url, _, x := pushedRepo(t, ts, id)
	if !strings.Contains(url, "/my%20repo%20%F0%9F%9A%80.git") {
		t.Fatalf("url %s is not percent-encoded", url)
	}
	if _, err := os.Stat(filepath.Join(ts.repos.Root(), owner, id+".git", "HEAD")); err != nil {
		t.Fatalf("identifier not kept verbatim on disk: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "c")
	testkit.Git(t, "", "clone", "-q", url, clone)
	if got := testkit.Git(t, clone, "rev-parse", "HEAD"); got != x {
		t.Fatalf("clone HEAD = %s, want %s", got, x)
	}
}

func TestG01G1c_UnknownRepoIs404(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner := randomNpub(t)
	for _, path := range []string{
		git.RepoURLPath(owner, "nope") + "/info/refs?service=git-upload-pack",
		git.RepoURLPath(owner, "nope") + "/info/refs?service=git-receive-pack",
	} {
		resp, body := ts.get(path)
		if resp.StatusCode != http.StatusNotFound || body != "Git error: repository not found" {
			t.Fatalf("GET %s = %d %q", path, resp.StatusCode, body)
		}
	}
	resp, err := http.Post(ts.srv.URL+git.RepoURLPath(owner, "nope")+"/git-upload-pack", "application/x-git-upload-pack-request", strings.NewReader("0000"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("upload-pack on a missing repo = %d", resp.StatusCode)
	}
}

func TestPathTraversalRefused(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, _ := ts.newRepo("proj")
	// A repository the traversals would reach if they escaped.
	for _, p := range []string{
		"/" + owner + "/..%2F..%2Fproj.git/info/refs?service=git-upload-pack",
		"/" + owner + "/%2e%2e.git/info/refs?service=git-upload-pack",
		"/" + owner + "/..%5Cproj.git/info/refs?service=git-upload-pack",
		"/" + owner + "/a%00b.git/info/refs?service=git-upload-pack",
		"/" + owner + "/.git/info/refs?service=git-upload-pack",
		"/npub1notvalid/proj.git/info/refs?service=git-upload-pack",
		"/" + strings.ToUpper(owner) + "/proj.git/info/refs?service=git-upload-pack",
		"/" + owner + "/proj.git/../../etc/passwd",
		"/" + owner + "/proj.git/objects/info/alternates",
		"/" + owner + "/proj.git/HEAD",
		"/" + owner + "/proj.git/info/refs",
	} {
		resp, body := ts.get(p)
		if resp.StatusCode == http.StatusOK {
			t.Errorf("GET %s = 200 %q", p, git.Clip(body, 80))
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "a\\b", "a\x00b", "../" + "x"} {
		if _, err := ts.repos.Path(ref(owner, id)); err == nil || !strings.HasPrefix(err.Error(), "invalid:") {
			t.Errorf("Path(%q) err = %v, want invalid:", id, err)
		}
		if err := ts.repos.Create(context.Background(), ref(owner, id)); err == nil {
			t.Errorf("Create(%q) succeeded", id)
		}
	}
	entries, err := os.ReadDir(filepath.Join(ts.repos.Root(), owner))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "proj.git" {
		t.Fatalf("owner directory holds %v", entries)
	}
}

func TestG01G6_Capabilities(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, _, _, _ := pushedRepo(t, ts, "proj")
	resp, body := ts.get(git.RepoURLPath(owner, "proj") + "/info/refs?service=git-upload-pack")
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-git-upload-pack-advertisement" {
		t.Fatalf("content-type %q", ct)
	}
	if !strings.HasPrefix(body, "001e# service=git-upload-pack\n0000") {
		t.Fatalf("v0 advertisement lacks the service preamble: %q", git.Clip(body, 60))
	}
	for _, c := range []string{"allow-tip-sha1-in-want", "allow-reachable-sha1-in-want", "filter"} {
		if !strings.Contains(body, " "+c) {
			t.Errorf("v0 capabilities lack %s", c)
		}
	}
	_, body = ts.get(git.RepoURLPath(owner, "proj")+"/info/refs?service=git-upload-pack", "Git-Protocol", "version=2")
	if strings.Contains(body, "# service=") || !strings.Contains(body, "version 2") {
		t.Fatalf("v2 advertisement: %q", body)
	}
	if !strings.Contains(body, "fetch=") || !strings.Contains(body[strings.Index(body, "fetch="):], "filter") {
		t.Fatalf("v2 fetch capability lacks filter: %q", body)
	}
}

func TestG01G6_FilterClonesV2AndReachableFetch(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url, work, first := pushedRepo(t, ts, "proj")
	second := testkit.GitCommit(t, work, "second")
	third := testkit.GitCommit(t, work, "third")
	ts.auth.addState(owner, "proj", state("s2", 20, "", "refs/heads/main", third))
	testkit.Git(t, work, "push", "-q", url, "main")

	tmp := t.TempDir()
	testkit.Git(t, "", "clone", "-q", "--filter=blob:none", url, filepath.Join(tmp, "blobless"))
	testkit.Git(t, "", "clone", "-q", "--no-checkout", "--filter=tree:0", url, filepath.Join(tmp, "treeless"))
	if v := testkit.Git(t, filepath.Join(tmp, "treeless"), "config", "remote.origin.partialclonefilter"); v != "tree:0" {
		t.Fatalf("treeless clone filter = %q", v)
	}
	testkit.Git(t, filepath.Join(tmp, "blobless"), "fetch", "-q", "--filter=tree:0", "origin")

	out := testkit.Git(t, "", "-c", "protocol.version=2", "ls-remote", url)
	if !strings.Contains(out, third+"\trefs/heads/main") {
		t.Fatalf("v2 ls-remote: %s", out)
	}
	// A non-tip commit reachable from main, fetched by oid.
	empty := filepath.Join(tmp, "empty")
	testkit.Git(t, "", "init", "-q", empty)
	testkit.Git(t, empty, "fetch", "-q", url, second)
	testkit.Git(t, empty, "-c", "protocol.version=0", "fetch", "-q", url, first)
	testkit.Git(t, empty, "cat-file", "-e", second+"^{commit}")
	testkit.Git(t, empty, "cat-file", "-e", first+"^{commit}")
}

// uploadRequest is a v0 upload-pack request for one want.
func uploadRequest(want string) []byte {
	var b bytes.Buffer
	b.Write(pktLine("want " + want + " ofs-delta\n"))
	b.WriteString(pktFlush)
	b.Write(pktLine("done\n"))
	return b.Bytes()
}

func gzipped(t *testing.T, p []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(p); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func post(t *testing.T, url, svc string, body []byte, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/"+svc, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-"+svc+"-request")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

func TestG01G8_GzipBodyAndHeadRequest(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url, _, x := pushedRepo(t, ts, "proj")
	resp, out := post(t, url, svcUpload, gzipped(t, uploadRequest(x)), "Content-Encoding", "gzip")
	if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte("PACK")) {
		t.Fatalf("gzip upload-pack = %d %q", resp.StatusCode, git.Clip(string(out), 80))
	}
	if resp.Header.Get("Content-Encoding") != "" {
		t.Fatal("pack response must not be compressed")
	}

	req, _ := http.NewRequest(http.MethodHead, ts.srv.URL+git.RepoURLPath(owner, "proj")+"/info/refs?service=git-upload-pack", nil)
	hr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	if hr.StatusCode != http.StatusOK || len(b) != 0 || hr.Header.Get("Content-Type") != "application/x-git-upload-pack-advertisement" {
		t.Fatalf("HEAD info/refs = %d %q %q", hr.StatusCode, hr.Header.Get("Content-Type"), b)
	}
}

func TestGzipBombBounded(t *testing.T) {
	ts := newTestServer(t, Options{MaxGzipBytes: 64 << 10})
	_, url, _, x := pushedRepo(t, ts, "proj")
	// ~10 MB of repeated want lines compress to a few KB; git would keep
	// reading them, so only the bound ends the request.
	line := pktLine("want " + x + "\n")
	bomb := gzipped(t, bytes.Repeat(line, (10<<20)/len(line)))
	resp, out := post(t, url, svcUpload, bomb, "Content-Encoding", "gzip")
	// An ERR pkt-line is what git prints as "remote error: ...".
	if !bytes.Contains(out, []byte("ERR error: request body exceeds the server's size limit (a fetch request may hold 64 KiB)")) {
		t.Fatalf("gzip bomb = %d %q", resp.StatusCode, out)
	}
	// the same list sent plain is bounded too (audit F18e: it was not)
	resp, out = post(t, url, svcUpload, bytes.Repeat(line, (1<<20)/len(line)))
	if !bytes.Contains(out, []byte("ERR error: request body exceeds the server's size limit (a fetch request may hold 64 KiB)")) {
		t.Fatalf("plain 1 MiB want list = %d %q", resp.StatusCode, git.Clip(string(out), 200))
	}
	resp, _ = post(t, url, svcUpload, []byte("not gzip at all"), "Content-Encoding", "gzip")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("corrupt gzip = %d", resp.StatusCode)
	}
}

// pushBody builds a receive-pack request by hand.
func pushBody(caps string, updates ...git.RefUpdate) []byte {
	var b bytes.Buffer
	for i, u := range updates {
		line := u.Old + " " + u.New + " " + u.Ref
		if i == 0 {
			line += "\x00" + caps
		}
		b.Write(pktLine(line + "\n"))
	}
	b.WriteString(pktFlush)
	return b.Bytes()
}

func TestG01G9_RejectionFormats(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	z := strings.Repeat("ab", 20)
	u := git.RefUpdate{Ref: "refs/heads/main", Old: git.ZeroOID, New: z}
	cases := []struct {
		caps string
		want string
	}{
		{"report-status", "000eunpack ok\n"},
		{"report-status-v2 side-band-64k", "\x01"},
		{"", "ERR authorisation failed: No state events"},
	}
	for _, c := range cases {
		resp, out := post(t, url, svcReceive, pushBody(c.caps, u))
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != receiveResultType {
			t.Fatalf("caps %q: %d %s", c.caps, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !bytes.Contains(out, []byte(c.want)) || !bytes.Contains(out, []byte("authorisation failed")) {
			t.Fatalf("caps %q: body %q lacks %q", c.caps, out, c.want)
		}
		if c.caps != "" && !bytes.Contains(out, []byte("ng refs/heads/main authorisation failed: ")) {
			t.Fatalf("caps %q: body %q lacks the ng line", c.caps, out)
		}
	}
	resp, out := post(t, url, svcReceive, []byte("zzzz"))
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(out[4:], []byte("ERR invalid:")) {
		t.Fatalf("malformed push = %d %q", resp.StatusCode, out)
	}
	if len(ts.refs(owner, "proj")) != 0 {
		t.Fatal("rejected pushes wrote refs")
	}
}

func TestMetricsCountOperations(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url, work, _ := pushedRepo(t, ts, "proj")
	testkit.Git(t, "", "clone", "-q", url, filepath.Join(t.TempDir(), "c"))
	testkit.GitCommit(t, work, "z")
	_, _ = testkit.GitTry(work, "push", url, "main")
	_ = owner
	for _, c := range []struct {
		labels []string
		min    float64
	}{
		{[]string{"push", "ok"}, 1},
		{[]string{"clone", "ok"}, 1},
		{[]string{"ls", "ok"}, 3},
	} {
		if v := counterValue(t, ts.h.m.ops.WithLabelValues(c.labels...)); v < c.min {
			t.Errorf("operations%v = %v, want >= %v", c.labels, v, c.min)
		}
	}
	if v := counterValue(t, ts.h.m.auth.WithLabelValues("rejected", ClassMismatch)); v != 1 {
		t.Errorf("rejected mismatch = %v", v)
	}
	if v := counterValue(t, ts.h.m.auth.WithLabelValues("accepted", ClassOK)); v != 1 {
		t.Errorf("accepted ok = %v", v)
	}
	if v := counterValue(t, ts.h.m.bytes.WithLabelValues("out", "clone")); v <= 0 {
		t.Errorf("clone bytes out = %v", v)
	}
	fams, err := ts.reg.Gather()
	// the four vectors observed here and grasp_prs_bytes_total, a plain
	// counter gathered from the start
	if err != nil || len(fams) != 5 {
		t.Fatalf("registry gathered %d families, %v", len(fams), err)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
