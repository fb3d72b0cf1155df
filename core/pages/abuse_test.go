package pages

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Pathological Markdown, each shaped after a case measured against
// goldmark v1.8.7 (audit 2026-11b, F30; docs/benchmarks.md): quadratic
// parsing on nested block quotes and on unclosed link destinations, and a
// GFM table whose rows are all padded to a 2,000-column delimiter row.
var pathological = map[string]string{
	"quotes.md":   strings.Repeat(">", 8<<10),
	"lists.md":    strings.Repeat("> - 1. ", 1<<10),
	"links.md":    strings.Repeat("[a](", 2<<10),
	"brackets.md": strings.Repeat("[", 1<<10) + "a" + strings.Repeat("]", 1<<10),
	"table.md":    strings.Repeat("|a", 2000) + "\n" + strings.Repeat("|-", 2000) + "\n" + strings.Repeat("|x\n", 2000),
	// not pathological, only larger than any Markdown rendered
	"large.md": strings.Repeat("A line of a long change log.\n", 3000),
}

// TestAbuse_F30_PathologicalMarkdownNeverReachesTheParser: a Markdown file
// whose shape makes goldmark's cost grow with the square of its size (or
// its output with rows times columns) is shown as plain text, with the
// reason, without being parsed; ordinary Markdown is still rendered.
func TestAbuse_F30_PathologicalMarkdownNeverReachesTheParser(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	r.announce(owner, "md", 100, nil)
	files := map[string]string{"ok.md": "# Fine\n\nA [link](docs/x.md) and a list:\n\n- one\n- two\n\n> quoted\n"}
	for name, src := range pathological {
		files[name] = src
	}
	r.push(owner, "md", workTree(t, files, "markdown"))
	base := git.RepoURLPath(nip34.Npub(owner.PK), "md")

	_, body := r.get(base + "/blob/main/ok.md")
	mustContain(t, "ordinary Markdown", body, "<h1>Fine</h1>", "<blockquote>")
	if n := r.metric("grasp_pages_renders_started_total", "kind", "markdown"); n != 1 {
		t.Fatalf("%v Markdown renders after one view of one ordinary file, want 1", n)
	}
	for name, src := range pathological {
		status, body := r.get(base + "/blob/main/" + name)
		if status != http.StatusOK {
			t.Errorf("%s: %d", name, status)
			continue
		}
		mustContain(t, name, body, "Shown as plain text: ", `<pre class="code chroma">`)
		mustNotContain(t, name, body, "<blockquote>", "<table>", "<li>")
		// the page is the file, escaped, its line numbers and a frame:
		// nothing multiplies it
		lines := strings.Count(src, "\n") + 1
		if limit := 5*len(src) + 80*lines + 16<<10; len(body) > limit {
			t.Errorf("%s: a %d-byte file of %d lines made a %d-byte page (limit %d)", name, len(src), lines, len(body), limit)
		}
	}
	if n := r.metric("grasp_pages_renders_started_total", "kind", "markdown"); n != 1 {
		t.Errorf("%v Markdown renders after the pathological files, want still 1: the parser was given one", n)
	}
	if n := r.metric("grasp_pages_renders_total", "kind", "markdown", "outcome", "plain_shape"); n != float64(len(pathological)) {
		t.Errorf("%v views counted as refused by the shape check, want %d", n, len(pathological))
	}
}

// TestAbuse_F30_MarkdownIsRenderedOncePerBlob: the rendered HTML is cached
// by the blob, so repeated and concurrent views of one file (and the
// README on the summary) cost one render each.
func TestAbuse_F30_MarkdownIsRenderedOncePerBlob(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", func(o *Options) { o.MaxRenders, o.MaxRendersPerClient = 1, 1 })
	owner := newKey(t)
	r.announce(owner, "md", 100, nil)
	r.push(owner, "md", workTree(t, map[string]string{"README.md": "# Read me\n", "docs/guide.md": "# Guide\n"}, "docs"))
	base := git.RepoURLPath(nip34.Npub(owner.PK), "md")
	for range 3 {
		_, body := r.get(base)
		mustContain(t, "summary", body, "<h1>Read me</h1>")
		_, body = r.get(base + "/blob/main/README.md")
		mustContain(t, "README", body, "<h1>Read me</h1>")
	}
	// many views of a file nobody has seen yet, at once: one render, and
	// every view gets its HTML
	var wg sync.WaitGroup
	bodies := make([]string, 12)
	for i := range bodies {
		wg.Go(func() { _, bodies[i] = r.get(base + "/blob/main/docs/guide.md") })
	}
	wg.Wait()
	rendered := 0
	for _, b := range bodies {
		if strings.Contains(b, "<h1>Guide</h1>") {
			rendered++
		}
	}
	// The summary's README links into main, the file view's too: one
	// render each for README.md (twice: the summary's and the blob view's
	// links are the same base) and guide.md.
	if n := r.metric("grasp_pages_renders_started_total", "kind", "markdown"); n != 2 {
		t.Errorf("%v Markdown renders for 2 files viewed %d times, want 2", n, 6+len(bodies))
	}
	if rendered == 0 {
		t.Errorf("none of %d concurrent views showed the rendered guide", len(bodies))
	}
}

// TestAbuse_F30_RendersAreBoundedAndOutliveNoBudget: renders run on a
// bounded pool, at most MaxRendersPerClient for one client; a view waits
// for its render at most RenderBudget (fake clock) or until its request
// ends, then shows plain text; the render finishes in its worker, holding
// its slot, and its result serves the next view.
func TestAbuse_F30_RendersAreBoundedAndOutliveNoBudget(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	r := newRigEnv(t, "http://127.0.0.1:7334", func(o *Options) {
		o.MaxRenders, o.MaxRendersPerClient, o.RenderBudget = 2, 1, 5*time.Second
	}, env.Env{Clock: clk})
	owner := newKey(t)
	r.announce(owner, "md", 100, nil)
	files := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d"} {
		files[n+".md"] = "# File " + n + "\n"
	}
	r.push(owner, "md", workTree(t, files, "four files"))
	base := git.RepoURLPath(nip34.Npub(owner.PK), "md")
	release := make(chan struct{})
	r.pages.renders.beforeRender = func(string) { <-release }
	view := func(ctx context.Context, client, name string) chan string {
		out := make(chan string, 1)
		go func() {
			req := httptest.NewRequest(http.MethodGet, base+"/blob/main/"+name, nil).WithContext(ctx)
			req.RemoteAddr = client + ":4242"
			rec := httptest.NewRecorder()
			r.pages.ServeHTTP(rec, req)
			out <- rec.Body.String()
		}()
		return out
	}
	running := func() float64 { return r.metric("grasp_pages_renders_running") }

	aCtx, leaveA := context.WithCancel(context.Background())
	a := view(aCtx, "192.0.2.1", "a.md")
	testwait.For(t, "client 1's render to start", func() bool { return running() == 1 })
	// the same client's second render: its share is taken
	mustContain(t, "a second render for one client", <-view(context.Background(), "192.0.2.1", "b.md"),
		"Shown as plain text: the server is busy rendering")
	c := view(context.Background(), "192.0.2.2", "c.md")
	testwait.For(t, "client 2's render to start", func() bool { return running() == 2 })
	// the pool is full: another client is not made to wait
	mustContain(t, "a render beyond the pool", <-view(context.Background(), "192.0.2.3", "d.md"),
		"Shown as plain text: the server is busy rendering")

	// client 1 leaves: its view ends at once, its render runs on in its slot
	leaveA()
	<-a
	if n := running(); n != 2 {
		t.Errorf("%v renders running after client 1 left, want 2 (the abandoned render keeps its slot)", n)
	}
	// client 2's view ends with the budget
	testwait.Stepping(t, "client 2's view to give up at the budget", func() { clk.Advance(time.Second) }, func() bool {
		select {
		case body := <-c:
			mustContain(t, "a render past the budget", body, "Shown as plain text: it was not rendered within 5s")
			return true
		default:
			return false
		}
	})
	if n := running(); n != 2 {
		t.Errorf("%v renders running after the budget, want 2", n)
	}
	close(release)
	testwait.For(t, "the renders to finish", func() bool { return running() == 0 })
	// their results were kept: the next views render nothing
	for _, n := range []string{"a", "c"} {
		mustContain(t, n+".md after its abandoned render", <-view(context.Background(), "192.0.2.9", n+".md"), "<h1>File "+n+"</h1>")
	}
	if n := r.metric("grasp_pages_renders_started_total", "kind", "markdown"); n != 2 {
		t.Errorf("%v renders started, want 2", n)
	}
}

// wideTree writes, straight into owner's repository d, a commit on main
// whose directory wide/ holds n files (one blob, n names), and a README.
func wideTree(t *testing.T, r *rig, owner key, d string, n int) nip34.RepoRef {
	t.Helper()
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: d}
	if err := r.repos.Create(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	dir, _ := r.repos.Path(repo)
	blob := gitStdin(t, dir, "same content\n", "hash-object", "-w", "--stdin")
	var list strings.Builder
	for i := range n {
		fmt.Fprintf(&list, "100644 blob %s\tfile%05d.txt\n", blob, i)
	}
	sub := gitStdin(t, dir, list.String(), "mktree")
	readme := gitStdin(t, dir, "# Wide\n", "hash-object", "-w", "--stdin")
	root := gitStdin(t, dir, fmt.Sprintf("040000 tree %s\twide\n100644 blob %s\tREADME.md\n", sub, readme), "mktree")
	commit := gitStdin(t, dir, "wide\n", "commit-tree", root)
	gitIn(t, dir, "update-ref", "refs/heads/main", commit)
	gitIn(t, dir, "symbolic-ref", "HEAD", "refs/heads/main")
	return repo
}

func gitStdin(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada Author", "GIT_AUTHOR_EMAIL=ada@example.org",
		"GIT_COMMITTER_NAME=Ada Author", "GIT_COMMITTER_EMAIL=ada@example.org", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// TestAbuse_F29_TreeListingsArePaginated: a directory of 2,500 entries is
// listed 1,000 to a page, so what one view builds does not grow with what
// was pushed.
func TestAbuse_F29_TreeListingsArePaginated(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	r.announce(owner, "wide", 100, nil)
	wideTree(t, r, owner, "wide", 2500)
	base := git.RepoURLPath(nip34.Npub(owner.PK), "wide")
	rows := func(body string) int { return strings.Count(body, `<tr><td><a href="`+base+`/blob/main/wide/file`) }

	status, first := r.get(base + "/tree/main/wide")
	if status != http.StatusOK {
		t.Fatalf("tree: %d", status)
	}
	if n := rows(first); n != 1000 {
		t.Errorf("the first page lists %d entries, want 1000", n)
	}
	mustContain(t, "first page", first, "Entries 1–1000 of 2500", `href="?page=2"`, "file00000.txt", "file00999.txt")
	mustNotContain(t, "first page", first, "file01000.txt")
	_, last := r.get(base + "/tree/main/wide?page=3")
	if n := rows(last); n != 500 {
		t.Errorf("the last page lists %d entries, want 500", n)
	}
	mustContain(t, "last page", last, "Entries 2001–2500 of 2500", `href="?page=2"`, "file02499.txt")
	// beyond the last page is the last page
	if _, far := r.get(base + "/tree/main/wide?page=99"); rows(far) != 500 {
		t.Errorf("page 99 lists %d entries, want the last page's 500", rows(far))
	}
	if len(first) > 1000*400 {
		t.Errorf("a page of 1000 entries is %d bytes", len(first))
	}
}

// TestAbuse_F29_ParallelViewsOfATreeReadItOnce: views of one tree that
// arrive together share one ls-tree and one parsed listing.
func TestAbuse_F29_ParallelViewsOfATreeReadItOnce(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", func(o *Options) { o.MaxGitReads = 1 })
	owner := newKey(t)
	r.announce(owner, "wide", 100, nil)
	wideTree(t, r, owner, "wide", 3000)
	base := git.RepoURLPath(nip34.Npub(owner.PK), "wide")
	if status, _ := r.get(base); status != http.StatusOK { // the refs and the root are read
		t.Fatalf("summary: %d", status)
	}
	before := r.metric("grasp_pages_git_reads_total", "command", "ls-tree")
	r.pages.slots <- struct{}{} // the one git slot: held until every view has arrived
	var wg sync.WaitGroup
	statuses := make([]int, 12)
	for i := range statuses {
		wg.Go(func() { statuses[i], _ = r.get(base + "/tree/main/wide") })
	}
	testwait.For(t, "every view to wait for one shared read", func() bool {
		r.pages.cache.mu.Lock()
		defer r.pages.cache.mu.Unlock()
		waiting := 0
		for _, f := range r.pages.cache.flights {
			waiting += f.waiters
		}
		return len(r.pages.cache.flights) == 1 && waiting == len(statuses) && gauge(r.pages) == 1
	})
	<-r.pages.slots
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("view %d: %d", i, s)
		}
	}
	// one ls-tree for wide/ itself (is it a directory?), one for its listing
	if n := r.metric("grasp_pages_git_reads_total", "command", "ls-tree") - before; n != 2 {
		t.Errorf("%d parallel views of one tree ran ls-tree %v times, want 2", len(statuses), n)
	}
}

// TestAbuse_F30_RenderFinishedBetweenCacheLookAndRunIsNotRepeated: a view
// looks in the cache, misses, and only then asks the pool; if the render of
// the same blob finished in between (under load this window is wide: CI saw
// 7 renders for 2 files in TestAbuse_F30_MarkdownIsRenderedOncePerBlob), its
// stored result is what the view gets, not a second render.
func TestAbuse_F30_RenderFinishedBetweenCacheLookAndRunIsNotRepeated(t *testing.T) {
	rp := newRenderPool(clock.NewFake(time.Now()), time.Hour, 1, 1)
	c := newCache(1 << 20)
	cached := func() (any, bool) { return c.get("k") }
	renders := 0
	render := func() any { renders++; return "html" }
	store := func(v any) { c.put("k", v, 4) }

	// the first view renders (nothing cached, nothing running)
	if v, o := rp.run(context.Background(), "markdown", "a", "k", cached, render, store); o != rendered || v != "html" {
		t.Fatalf("first view: %v %v", v, o)
	}
	// the second view looked in the cache before the first render stored
	// its result (a miss), and asks the pool after the render ended
	v, o := rp.run(context.Background(), "markdown", "b", "k", cached, render, store)
	if renders != 1 {
		t.Fatalf("%d renders of one blob, want 1: the render that had just finished was repeated", renders)
	}
	if o != fromCache || v != "html" {
		t.Fatalf("second view got %v (%v), want the stored render", v, o)
	}
}
