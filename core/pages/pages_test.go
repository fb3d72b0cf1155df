package pages

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	dto "github.com/prometheus/client_model/go"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testwait"
)

const readme = "# Hello grasp\n\nSome *emphasis* and a [link](https://example.org), [the guide](docs/guide.md#start) and [a way out](../../etc).\n\n" +
	"<script>alert('x')</script>\n\n[bad](javascript:alert(1))\n\n<img src=x onerror=alert(2)>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"

// TestPages_RepoPageShowsReadme: the README of HEAD is rendered from
// Markdown, and nothing in it can run (issue 16 part 1).
func TestPages_RepoPageShowsReadme(t *testing.T) {
	r := newRig(t, "https://git.example.org", nil)
	owner := newKey(t)
	r.announce(owner, "hello", 100, nostr.Tags{{"name", "Hello World"}, {"description", "A repository for tests"}})
	r.push(owner, "hello", workTree(t, map[string]string{"README.md": readme, "src/main.go": "package main\n",
		"docs/guide.md": "# Guide\n\nBack to [the README](../README.md).\n"}, "first commit"))
	base := git.RepoURLPath(nip34.Npub(owner.PK), "hello")
	status, body := r.get(base)
	if status != http.StatusOK {
		t.Fatalf("repo page: %d\n%s", status, body)
	}
	mustContain(t, "repo page", body, "<h1>Hello grasp</h1>", "<em>emphasis</em>", `href="https://example.org"`, "<table>", "<td>1</td>",
		`href="`+base+`/blob/main/docs/guide.md#start"`, `href="../../etc"`)
	// a Markdown file elsewhere links relative to its own directory
	_, body = r.get(base + "/blob/main/docs/guide.md")
	mustContain(t, "guide", body, "<h1>Guide</h1>", `href="`+base+`/blob/main/README.md"`)
	mustNotContain(t, "repo page", body, "<script>alert", "javascript:alert", "onerror")
}

// TestPages_RepoPageShowsAnnouncementPeopleAndRefs: name, description, web
// links, our clone URL, announced clone URLs and relays, the owner, the
// confirmed and the invited maintainers (as core/roster resolves them),
// branches and tags with HEAD marked, recent commits, and a link to a web
// client.
func TestPages_RepoPageShowsAnnouncementPeopleAndRefs(t *testing.T) {
	r := newRig(t, "https://git.example.org", nil)
	owner, confirmed, invited := newKey(t), newKey(t), newKey(t)
	r.announce(owner, "proj", 100, nostr.Tags{{"name", "Project X"}, {"description", "Does X"}, {"web", "https://x.example"},
		{"maintainers", confirmed.PK, invited.PK}})
	r.announce(confirmed, "proj", 101, nostr.Tags{{"maintainers", owner.PK}})
	work := workTree(t, map[string]string{"a.txt": "a\n"}, "add a")
	gitIn(t, work, "tag", "v1.0")
	gitIn(t, work, "checkout", "-q", "-b", "feature/two")
	commitFiles(t, work, map[string]string{"b.txt": "b\n"}, "add b on a branch")
	gitIn(t, work, "checkout", "-q", "main")
	r.push(owner, "proj", work)

	status, body := r.get(git.RepoURLPath(nip34.Npub(owner.PK), "proj"))
	if status != http.StatusOK {
		t.Fatalf("repo page: %d", status)
	}
	mustContain(t, "repo page", body,
		"<h1>Project X</h1>", "Does X", `href="https://x.example"`,
		"git clone https://git.example.org/"+nip34.Npub(owner.PK)+"/proj.git", "wss://git.example.org",
		"Owner: <code", nip34.Npub(owner.PK),
		"Maintainer: <code>"+nip34.Npub(confirmed.PK),
		"Invited maintainer (has not listed back yet): <code>"+nip34.Npub(invited.PK),
		`>main</a> <span class="badge head">HEAD</span>`, ">feature/two</a>", ">v1.0</a>",
		"add a", "Ada Author", "https://gitworkshop.dev/naddr1")
	mustNotContain(t, "repo page", body, "Maintainer: <code>"+nip34.Npub(invited.PK))
	// links between the views
	base := git.RepoURLPath(nip34.Npub(owner.PK), "proj")
	for _, href := range []string{base + "/tree", base + "/commits", base + "/refs", base + "/issues", base + "/prs", base + "/tree/feature/two"} {
		mustContain(t, "repo page", body, `href="`+href+`"`)
	}
}

// TestPages_BrowseTreeFileCommitHistoryRefs: read-only browsing, with the
// size limit and binary detection.
func TestPages_BrowseTreeFileCommitHistoryRefs(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", func(o *Options) { o.MaxFileBytes = 1000 })
	owner := newKey(t)
	r.announce(owner, "b", 100, nil)
	work := workTree(t, map[string]string{"docs/guide.md": "# Guide\n", "main.go": "package main\n\nfunc main() { println(\"<hi>\") }\n",
		"blob.bin": "\x00\x01\x02binary", "big.txt": strings.Repeat("x", 5000)}, "first")
	second := commitFiles(t, work, map[string]string{"main.go": "package main\n\nfunc main() { println(\"bye\") }\n"}, "second: say bye")
	r.push(owner, "b", work)
	base := git.RepoURLPath(nip34.Npub(owner.PK), "b")

	_, body := r.get(base + "/tree")
	mustContain(t, "root tree", body, `href="`+base+`/tree/main/docs">docs/</a>`, `href="`+base+`/blob/main/main.go">main.go</a>`)
	_, body = r.get(base + "/tree/main/docs")
	mustContain(t, "docs tree", body, `href="`+base+`/blob/main/docs/guide.md">guide.md</a>`)
	_, body = r.get(base + "/blob/main/main.go")
	mustContain(t, "file", pageText(body), `func main() { println("bye") }`)
	_, body = r.get(base + "/blob/main/blob.bin")
	mustContain(t, "binary file", body, "Binary file, not shown")
	_, body = r.get(base + "/blob/main/big.txt")
	mustContain(t, "large file", body, "files over 1000 B are not shown")
	mustNotContain(t, "large file", body, strings.Repeat("x", 1001))
	_, body = r.get(base + "/commit/" + second)
	mustContain(t, "commit", body, "second: say bye", `<span class="del">-func main() { println(&#34;&lt;hi&gt;&#34;) }</span>`)
	mustContain(t, "commit", html.UnescapeString(body), `<span class="add">+func main() { println("bye") }</span>`)
	_, body = r.get(base + "/commits")
	mustContain(t, "history", body, "second: say bye", "first", `href="`+base+`/commit/`+second+`"`)
	_, body = r.get(base + "/refs")
	mustContain(t, "refs", body, `>main</a> <span class="badge head">HEAD</span>`, second)

	for _, p := range []string{"/tree/nope", "/blob/main/missing.txt", "/commit/" + strings.Repeat("0", 40), "/commit/HEAD~1", "/blob/main/docs", "/nothing"} {
		if status, _ := r.get(base + p); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, status)
		}
	}
}

// TestPages_CacheFollowsThePush: what is read from git is cached by the
// ref tips, so a push shows at once.
func TestPages_CacheFollowsThePush(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	r.announce(owner, "c", 100, nil)
	work := workTree(t, map[string]string{"README.md": "# Version one\n"}, "one")
	r.push(owner, "c", work)
	base := git.RepoURLPath(nip34.Npub(owner.PK), "c")
	_, body := r.get(base)
	mustContain(t, "first view", body, "Version one")
	commitFiles(t, work, map[string]string{"README.md": "# Version two\n"}, "two")
	r.push(owner, "c", work)
	_, body = r.get(base)
	mustContain(t, "after the push", body, "Version two", ">two</td>")
	mustNotContain(t, "after the push", body, "Version one")
}

// TestPages_UnknownRepositoryIs404: a repository not hosted here, a bad
// owner or a hostile identifier gets the HTML 404, escaped.
func TestPages_UnknownRepositoryIs404(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	for _, p := range []string{git.RepoURLPath(nip34.Npub(owner.PK), "none"), "/npub1nope/x.git", git.RepoURLPath(nip34.Npub(owner.PK), "<script>"), "/nope"} {
		status, body := r.get(p)
		if status != http.StatusNotFound || !strings.Contains(body, "<h1>Not found</h1>") || strings.Contains(body, "<script>") {
			t.Errorf("%s: %d\n%s", p, status, body)
		}
	}
	if status, _ := r.get("/icon.png"); status != http.StatusOK {
		t.Errorf("icon: %d", status)
	}
}

// TestPages_AnnouncedButEmptyRepository: before the first push the page
// exists, with the clone command, and says nothing was pushed.
func TestPages_AnnouncedButEmptyRepository(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	r.announce(owner, "fresh", 100, nostr.Tags{{"name", "Fresh"}})
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: "fresh"}
	if err := r.repos.Create(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	base := git.RepoURLPath(repo.Npub(), "fresh")
	status, body := r.get(base)
	if status != http.StatusOK {
		t.Fatalf("empty repo page: %d", status)
	}
	mustContain(t, "empty repo page", body, "<h1>Fresh</h1>", "Nothing has been pushed yet.", "git clone http://127.0.0.1:7334/"+repo.Npub()+"/fresh.git")
	if status, _ := r.get(base + "/tree"); status != http.StatusNotFound {
		t.Errorf("tree of an empty repository: %d, want 404", status)
	}
}

// TestPages_OnlyGetAndHead: a page answers GET and HEAD (same status, no
// body); anything else is 405 with Allow.
func TestPages_OnlyGetAndHead(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	resp, err := http.Head(r.server.URL + "/")
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("HEAD /: %v %v", resp, err)
	}
	resp, err = http.Post(r.server.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(resp.Header.Get("Allow"), "GET") {
		t.Errorf("POST /: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestPages_GitReadsAreBounded: pages run at most MaxGitReads git
// processes; a view that finds every slot taken waits (and is counted in
// grasp_pages_git_waiting) until one is free, or gives up with its request
// (views of two repositories: views of one share their reads).
func TestPages_GitReadsAreBounded(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", func(o *Options) { o.MaxGitReads = 1 })
	owner := newKey(t)
	for _, d := range []string{"b", "c"} {
		r.announce(owner, d, 100, nil)
		r.push(owner, d, workTree(t, map[string]string{"a": "a"}, "a"))
	}
	view := func(ctx context.Context, d string) chan int {
		path := git.RepoURLPath(nip34.Npub(owner.PK), d)
		done := make(chan int, 1)
		go func() {
			rec := httptest.NewRecorder()
			r.pages.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx))
			done <- rec.Code
		}()
		return done
	}
	r.pages.slots <- struct{}{} // the one slot is busy
	first := view(context.Background(), "b")
	testwait.For(t, "the view to wait for a git slot", func() bool { return gauge(r.pages) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	second := view(ctx, "c")
	testwait.For(t, "a second view to wait", func() bool { return gauge(r.pages) == 2 })
	cancel()
	if code := <-second; code != http.StatusInternalServerError {
		t.Errorf("a view that gave up waiting answered %d, want 500", code)
	}
	<-r.pages.slots
	if code := <-first; code != http.StatusOK {
		t.Errorf("the waiting view answered %d once the slot was free, want 200", code)
	}
	if w := gauge(r.pages); w != 0 {
		t.Errorf("%v views still counted as waiting", w)
	}
}

func gauge(p *Pages) float64 {
	var m dto.Metric
	if err := p.waiting.Write(&m); err != nil {
		return -1
	}
	return m.GetGauge().GetValue()
}
