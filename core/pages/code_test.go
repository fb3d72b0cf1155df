package pages

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed/atom"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// The code-reading pages of issue 26 part 4, measured against what cgit
// offers: numbered lines with anchors, colours, raw and download links,
// history of a file or directory, commits with their file list and
// diffstat, snapshots, Atom feeds and the clone box.

// codeRepo pushes a repository with a Go file, a file of no known
// language, a long file and docs, in two commits; it returns the
// repository's URL path and both commits.
func codeRepo(t *testing.T, r *rig, owner key) (base, first, second string) {
	t.Helper()
	r.announce(owner, "code", 100, nostr.Tags{{"name", "Code"}})
	work := workTree(t, map[string]string{
		"main.go":       "package main\n\n// main greets.\nfunc main() {\n\tprintln(\"hi\")\n}\n",
		"notes.zzz":     "first line\nsecond <line>\n",
		"docs/a.md":     "# A\n",
		"docs/long.txt": strings.Repeat("a line\n", maxCodeLines+5),
	}, "first")
	first = gitIn(t, work, "rev-parse", "HEAD")
	second = commitFiles(t, work, map[string]string{"main.go": "package main\n\n// main greets.\nfunc main() {\n\tprintln(\"hello\")\n}\n",
		"docs/b.md": "# B\n"}, "second: greet better")
	gitIn(t, work, "tag", "v1.0")
	r.push(owner, "code", work)
	return git.RepoURLPath(nip34.Npub(owner.PK), "code"), first, second
}

// TestPages_FileLinesAnchorsAndColours: a file is numbered lines, each
// anchored (#L4 links to itself), coloured server-side by its language,
// with raw, download and history links; a file of no known language is
// numbered without colours; a very long one is cut with a link to it raw.
func TestPages_FileLinesAnchorsAndColours(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, _, _ := codeRepo(t, r, owner)

	_, body := r.get(base + "/blob/main/main.go")
	mustContain(t, "Go file", body,
		`<span class="line" id="L4"><a class="ln" href="#L4">4</a><span class="kd">func</span>`, // a keyword, coloured
		`<span class="c1">// main greets.</span>`, ".chroma .kd {",
		`href="`+base+`/raw/main/main.go">Raw</a>`, `href="`+base+`/raw/main/main.go?download">Download</a>`,
		`href="`+base+`/commits/main/main.go">History</a>`)
	mustNotContain(t, "Go file", body, "<script")
	mustContain(t, "Go file", pageText(body), "4func main() {", "5\tprintln(\"hello\")")

	_, body = r.get(base + "/blob/main/notes.zzz")
	mustContain(t, "unknown language", body, `<span class="line" id="L2"><a class="ln" href="#L2">2</a>second &lt;line&gt;</span>`)
	mustNotContain(t, "unknown language", body, ".chroma .kd {")

	_, body = r.get(base + "/blob/main/docs/long.txt")
	if n := strings.Count(body, `<span class="line" id=`); n != maxCodeLines {
		t.Errorf("a file of %d lines shows %d, want %d", maxCodeLines+5, n, maxCodeLines)
	}
	mustContain(t, "long file", body, "Only the first 10000 lines are shown", `href="`+base+`/raw/main/docs/long.txt">Read it raw`)
}

// TestPages_RawAndDownload: raw/<rev>/<path> is the file's bytes as text,
// ?download makes it an attachment; a directory or a missing file is 404.
func TestPages_RawAndDownload(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, first, _ := codeRepo(t, r, owner)
	for _, c := range []struct{ path, want string }{
		{"/raw/main/notes.zzz", "first line\nsecond <line>\n"},
		{"/raw/" + first + "/main.go", "package main\n\n// main greets.\nfunc main() {\n\tprintln(\"hi\")\n}\n"},
		{"/raw/v1.0/docs/b.md", "# B\n"},
	} {
		resp, err := http.Get(r.server.URL + base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != c.want || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s: %d %q %q", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
	resp, err := http.Get(r.server.URL + base + "/raw/main/docs/a.md?download")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := resp.Header.Get("Content-Disposition"); d != "attachment; filename=a.md" {
		t.Errorf("download: Content-Disposition %q", d)
	}
	for _, p := range []string{"/raw/main/docs", "/raw/main/nothing", "/raw/main", "/raw/nope/main.go"} {
		if status, _ := r.get(base + p); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, status)
		}
	}
}

// TestPages_SnapshotsOfAnyRef: archive/<branch, tag or commit>.tar.gz and
// .zip hold that revision's tree under <identifier>-<rev>/.
func TestPages_SnapshotsOfAnyRef(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, first, _ := codeRepo(t, r, owner)
	get := func(path string) (*http.Response, []byte) {
		resp, err := http.Get(r.server.URL + base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get("/archive/v1.0.tar.gz")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Disposition") != "attachment; filename=code-v1.0.tar.gz" {
		t.Fatalf("tar.gz of a tag: %d %v", resp.StatusCode, resp.Header)
	}
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Typeflag == tar.TypeReg {
			names = append(names, h.Name)
		}
	}
	sort.Strings(names)
	if want := "code-v1.0/docs/a.md code-v1.0/docs/b.md code-v1.0/docs/long.txt code-v1.0/main.go code-v1.0/notes.zzz"; strings.Join(names, " ") != want {
		t.Errorf("tar.gz of v1.0 holds %v, want %s", names, want)
	}
	resp, b = get("/archive/" + first + ".zip")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("zip of a commit: %d", resp.StatusCode)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	// the first commit has no docs/b.md
	if want := "code-" + first + "/docs/a.md code-" + first + "/docs/long.txt code-" + first + "/main.go code-" + first + "/notes.zzz"; strings.Join(names, " ") != want {
		t.Errorf("zip of the first commit holds %v, want %s", names, want)
	}
	for _, p := range []string{"/archive/main.rar", "/archive/nope.zip", "/archive/.zip"} {
		if status, _ := r.get(base + p); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, status)
		}
	}
	_, body := r.get(base + "/refs")
	mustContain(t, "refs", body, `href="`+base+`/archive/main.tar.gz"`, `href="`+base+`/archive/v1.0.zip"`)
}

// TestPages_HistoryOfAFileOrDirectory: commits/<rev>/<path> lists the
// commits that change that file or directory only.
func TestPages_HistoryOfAFileOrDirectory(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, first, second := codeRepo(t, r, owner)
	for _, c := range []struct {
		path      string
		want, not []string
	}{
		{"/commits/main/notes.zzz", []string{first}, []string{second}},
		{"/commits/main/main.go", []string{first, second}, nil},
		{"/commits/main/docs", []string{first, second}, nil},
		{"/commits/v1.0/docs/b.md", []string{second}, []string{first}},
	} {
		status, body := r.get(base + c.path)
		if status != http.StatusOK {
			t.Errorf("%s: %d", c.path, status)
			continue
		}
		for _, w := range c.want {
			mustContain(t, c.path, body, `href="`+base+`/commit/`+w+`"`)
		}
		for _, n := range c.not {
			mustNotContain(t, c.path, body, `href="`+base+`/commit/`+n+`"`)
		}
	}
	mustContain(t, "file history", func() string { _, b := r.get(base + "/commits/main/notes.zzz"); return b }(), "that change", "notes.zzz")
	if status, _ := r.get(base + "/commits/main/missing.txt"); status != http.StatusNotFound {
		t.Errorf("history of a missing file: %d, want 404", status)
	}
}

// TestPages_CommitFilesAndDiffstat: a commit page lists the files it
// changed with their added and deleted lines, each linked to its diff.
func TestPages_CommitFilesAndDiffstat(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, first, second := codeRepo(t, r, owner)
	_, body := r.get(base + "/commit/" + second)
	mustContain(t, "commit", body, "2 files changed", `<span class="add">+2</span> <span class="del">−1</span>`,
		`<a href="#f-0">docs/b.md</a>`, `<a href="#f-1">main.go</a>`, `id="f-1"`)
	mustContain(t, "commit", pageText(body), `+	println("hello")`, `-	println("hi")`)
	// the first commit is compared with nothing
	_, body = r.get(base + "/commit/" + first)
	mustContain(t, "root commit", body, "4 files changed", "notes.zzz")
}

var entryID = regexp.MustCompile(`^nostr:note1[0-9a-z]+$`)

// TestPages_AtomFeeds: the commits, issues and PRs of a repository as
// Atom feeds, read with gofeed's Atom parser (github.com/mmcdole/gofeed
// v1.4.2, atom.Parser), and checked for what RFC 4287 requires of a feed
// and of each entry: id, title, updated (a date), an author, and links
// that are absolute URLs of pages here.
func TestPages_AtomFeeds(t *testing.T) {
	r := newRig(t, "https://git.example.org/base", nil)
	owner, reporter := newKey(t), newKey(t)
	base, first, second := codeRepo(t, r, owner)
	coord := nip34.RepoRef{Pubkey: owner.PK, Identifier: "code"}.String()
	issue := reporter.sign(t, nip34.KindIssue, 1_700_000_100, nostr.Tags{{"a", coord}, {"subject", "It <breaks> & bends"}}, "Steps: run it.\x01")
	pr := reporter.sign(t, nip34.KindPR, 1_700_000_200, nostr.Tags{{"a", coord}, {"subject", "Fix it"}, {"c", second}}, "This fixes it.")
	r.save(issue)
	r.save(pr)

	read := func(path string) *atom.Feed {
		t.Helper()
		resp, err := http.Get(r.server.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/atom+xml; charset=utf-8" {
			t.Fatalf("%s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		f, err := (&atom.Parser{}).Parse(resp.Body)
		if err != nil {
			t.Fatalf("%s is not Atom: %v", path, err)
		}
		if f.ID == "" || f.Title == "" || f.UpdatedParsed == nil {
			t.Errorf("%s: feed id %q, title %q, updated %q: each is required", path, f.ID, f.Title, f.Updated)
		}
		self := false
		for _, l := range f.Links {
			self = self || (l.Rel == "self" && l.Href == "https://git.example.org"+path)
		}
		if !self {
			t.Errorf("%s: no rel=self link to itself in %v", path, f.Links)
		}
		for _, e := range f.Entries {
			if e.ID == "" || e.Title == "" || e.UpdatedParsed == nil || len(e.Authors) == 0 || e.Authors[0].Name == "" || len(e.Links) == 0 {
				t.Errorf("%s: entry %+v lacks what RFC 4287 requires", path, e)
				continue
			}
			if u, err := url.Parse(e.Links[0].Href); err != nil || u.Scheme != "https" || u.Host != "git.example.org" || !strings.HasPrefix(u.Path, "/base/") {
				t.Errorf("%s: entry link %q is not an absolute URL here", path, e.Links[0].Href)
			}
		}
		return f
	}
	commits := read("/base" + base + "/feed/commits")
	if len(commits.Entries) != 2 || commits.Entries[0].Title != "second: greet better" || commits.Entries[1].Title != "first" ||
		commits.Entries[0].Links[0].Href != "https://git.example.org/base"+base+"/commit/"+second {
		t.Errorf("commits feed: %v", commits)
	}
	if tagged := read("/base" + base + "/feed/commits/" + first); len(tagged.Entries) != 1 || tagged.Entries[0].ID != "https://git.example.org/base"+base+"/commit/"+first {
		t.Errorf("feed of the first commit: %v", tagged)
	}
	issues := read("/base" + base + "/feed/issues")
	if len(issues.Entries) != 1 || issues.Entries[0].Title != "It <breaks> & bends (open)" || !entryID.MatchString(issues.Entries[0].ID) ||
		issues.Entries[0].Content == nil || !strings.HasPrefix(issues.Entries[0].Content.Value, "Steps: run it.") || issues.Entries[0].Links[0].Href != "https://git.example.org/base"+base+"/issues/"+issue.ID {
		t.Errorf("issues feed: %v", issues)
	}
	if _, data, err := nip19.Decode(strings.TrimPrefix(issues.Entries[0].ID, "nostr:")); err != nil || data != issue.ID {
		t.Errorf("issue entry id %q names %v, not the issue", issues.Entries[0].ID, data)
	}
	if want := time.Unix(1_700_000_100, 0).UTC(); !issues.Entries[0].UpdatedParsed.Equal(want) {
		t.Errorf("issue entry updated %v, want its creation %v", issues.Entries[0].UpdatedParsed, want)
	}
	prs := read("/base" + base + "/feed/prs")
	if len(prs.Entries) != 1 || prs.Entries[0].Title != "PR: Fix it (open)" {
		t.Errorf("PRs feed: %v", prs)
	}
	for _, p := range []string{"/feed/nothing", "/feed/issues/x", "/feed/commits/nope"} {
		if status, _ := r.get("/base" + base + p); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, status)
		}
	}
}

// TestPages_CloneBoxNostrURLAndNaddr: the summary shows the https clone
// URL, ngit's nostr:// URL (npub, this relay as the hint, the identifier,
// each percent-encoded) and the naddr, each in a box one click selects.
func TestPages_CloneBoxNostrURLAndNaddr(t *testing.T) {
	for _, c := range []struct{ public, hint string }{
		{"https://git.example.org", "git.example.org"},
		{"http://127.0.0.1:7334/sub", "ws%3A%2F%2F127.0.0.1%3A7334%2Fsub"},
	} {
		r := newRig(t, c.public, nil)
		owner := newKey(t)
		d := "my repo:x"
		r.announce(owner, d, 100, nostr.Tags{{"relays", "wss://relay.example.com"}})
		r.push(owner, d, workTree(t, map[string]string{"a": "a"}, "a"))
		_, body := r.get(r.svc.Path + git.RepoURLPath(nip34.Npub(owner.PK), d))
		nostrURL := "nostr://" + nip34.Npub(owner.PK) + "/" + c.hint + "/my%20repo%3Ax"
		mustContain(t, "clone box", body, `<code class="copy">`+r.svc.CloneURL(owner.PK, d)+`</code>`, `<code class="copy">`+nostrURL+`</code>`)
		m := regexp.MustCompile(`<code class="copy">(naddr1[0-9a-z]+)</code>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("%s: no naddr in the clone box", c.public)
		}
		prefix, data, err := nip19.Decode(m[1])
		ep, ok := data.(nostr.EntityPointer)
		if err != nil || prefix != "naddr" || !ok || ep.PublicKey != owner.PK || ep.Kind != nip34.KindAnnouncement || ep.Identifier != d ||
			len(ep.Relays) != 2 || ep.Relays[0] != r.svc.RelayURL() || ep.Relays[1] != "wss://relay.example.com" {
			t.Errorf("%s: naddr decodes to %s %+v %v", c.public, prefix, data, err)
		}
	}
}

// TestAbuse_F30_ColouringIsBoundedAndCached: colouring runs a lexer over
// anyone's file, so it is bounded like Markdown: a file over 64 KiB or with
// a line over 1000 characters is numbered without being lexed, and a file
// is lexed once however often it is viewed.
func TestAbuse_F30_ColouringIsBoundedAndCached(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	r.announce(owner, "big", 100, nil)
	r.push(owner, "big", workTree(t, map[string]string{
		"small.go": "package small\n",
		"big.go":   "package big\n\n" + strings.Repeat("var x = \"((((((((((((((((((((\"\n", (maxHighlightBytes/30)+10),
		"long.go":  "package long\n\nvar x = \"" + strings.Repeat("(", maxHighlightLine) + "\"\n",
	}, "files"))
	base := git.RepoURLPath(nip34.Npub(owner.PK), "big")
	for range 3 {
		_, body := r.get(base + "/blob/main/small.go")
		mustContain(t, "small file", body, `<span class="kn">package</span>`)
	}
	_, body := r.get(base + "/blob/main/big.go")
	mustContain(t, "large file", body, "Not coloured as Go: files over 64 KiB are not coloured.", `<a class="ln" href="#L2">2</a>`)
	mustNotContain(t, "large file", body, `<span class="kn">package</span>`)
	_, body = r.get(base + "/blob/main/long.go")
	mustContain(t, "a file with a long line", body, "Not coloured as Go: lines over 1000 characters are not coloured.", `<a class="ln" href="#L3">3</a>`)
	mustNotContain(t, "a file with a long line", body, `<span class="kn">package</span>`)
	if n := r.metric("grasp_pages_renders_started_total", "kind", "highlight"); n != 1 {
		t.Errorf("%v lexer runs for one small file viewed 3 times and two that may not be lexed, want 1", n)
	}
}

// TestPages_FeedsNamedInTheHead: every page of a repository names its
// three Atom feeds in its head (<link rel="alternate">), where browsers and
// feed readers find them; the landing page and a page not found name none.
func TestPages_FeedsNamedInTheHead(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, _, second := codeRepo(t, r, owner)
	for _, p := range []string{"", "/tree/main/docs", "/blob/main/main.go", "/blame/main/main.go", "/commits", "/commit/" + second, "/issues", "/prs", "/refs"} {
		status, body := r.get(base + p)
		if status != http.StatusOK {
			t.Errorf("%s: %d", p, status)
			continue
		}
		head, _, _ := strings.Cut(body, "</head>")
		mustContain(t, base+p, head,
			`<link rel="alternate" type="application/atom+xml" title="Commits" href="`+base+`/feed/commits">`,
			`<link rel="alternate" type="application/atom+xml" title="Issues" href="`+base+`/feed/issues">`,
			`<link rel="alternate" type="application/atom+xml" title="Pull requests and patches" href="`+base+`/feed/prs">`)
	}
	for _, p := range []string{"/", base + "/blob/main/nothing"} {
		_, body := r.get(p)
		mustNotContain(t, p, body, `rel="alternate"`)
	}
}
