package pages

import (
	"net/http"
	"strings"
	"testing"
)

// TestPages_BlameLinesWithTheirCommits: blame/<rev>/<path> shows each line
// of a file with the commit that last changed it (cgit's and Forgejo's
// blame): the lines the second commit changed link to it, the others to the
// first; each line keeps its #L anchor; the file page links to its blame
// and back.
func TestPages_BlameLinesWithTheirCommits(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, first, second := codeRepo(t, r, owner)

	_, file := r.get(base + "/blob/main/main.go")
	mustContain(t, "file page", file, `href="`+base+`/blame/main/main.go">Blame</a>`)

	status, body := r.get(base + "/blame/main/main.go")
	if status != http.StatusOK {
		t.Fatalf("blame: %d\n%s", status, body)
	}
	mustContain(t, "blame", body, `href="`+base+`/blob/main/main.go">Normal view</a>`,
		`<span class="line start" id="L1"><span class="bl"><a href="`+base+`/commit/`+first+`" title="Ada Author, 2026-01-02 03:04: first">`+first[:7]+`</a> 2026-01-02</span><a class="ln" href="#L1">1</a>package main</span>`,
		`<span class="line start" id="L5"><span class="bl"><a href="`+base+`/commit/`+second+`" title="Ada Author, 2026-01-02 03:04: second: greet better">`+second[:7]+`</a> 2026-01-02</span><a class="ln" href="#L5">5</a>`,
		`<span class="line" id="L2"><span class="bl"></span><a class="ln" href="#L2">2</a></span>`,
		`<span class="line start" id="L6">`)
	mustContain(t, "blame", pageText(body), "5\tprintln(\"hello\")")

	// an older revision is blamed as it was
	_, body = r.get(base + "/blame/" + first + "/main.go")
	mustContain(t, "old blame", body, `href="`+base+`/commit/`+first+`"`)
	mustNotContain(t, "old blame", body, `href="`+base+`/commit/`+second+`"`)

	for _, p := range []string{"/blame/main/docs", "/blame/main/nothing", "/blame/main", "/blame/nope/main.go", "/blame/main/../main.go"} {
		if status, _ := r.get(base + p); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, status)
		}
	}
}

// TestPages_BlameIsBoundedAndCached: a blame is one git process in the
// pages' git slots, run once per commit and path however often it is
// viewed, and of a file longer than a view it blames and shows the lines a
// view shows (maxCodeLines).
func TestPages_BlameIsBoundedAndCached(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:7334", nil)
	owner := newKey(t)
	base, _, _ := codeRepo(t, r, owner)
	for range 3 {
		if status, _ := r.get(base + "/blame/main/main.go"); status != http.StatusOK {
			t.Fatalf("blame: %d", status)
		}
	}
	if n := r.metric("grasp_pages_git_reads_total", "command", "blame"); n != 1 {
		t.Errorf("%v git blame runs for one file viewed 3 times, want 1", n)
	}
	_, body := r.get(base + "/blame/main/docs/long.txt")
	if n := strings.Count(body, `<span class="line`); n != maxCodeLines {
		t.Errorf("a blame of %d lines shows %d, want %d", maxCodeLines+5, n, maxCodeLines)
	}
	if n := strings.Count(body, `<span class="line start"`); n != 1 {
		t.Errorf("one commit made every line of docs/long.txt: %d groups shown, want 1", n)
	}
	mustContain(t, "long blame", body, "Only the first 10000 lines are blamed")
	if n := r.metric("grasp_pages_git_reads_total", "command", "blame"); n != 2 {
		t.Errorf("%v git blame runs after two files, want 2", n)
	}
}
