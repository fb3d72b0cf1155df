package pages

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/grasp-dev/grasp/core/visibility"
)

// discussRig is a repository "proj" of owner, with maint a confirmed
// maintainer, and its first commit pushed.
type discussRig struct {
	*rig
	owner, maint key
	coord, base  string
	work         string
}

func newDiscussRig(t *testing.T, mod func(*Options), e env.Env) *discussRig {
	r := newRigEnv(t, "https://git.example.org", mod, e)
	d := &discussRig{rig: r, owner: newKey(t), maint: newKey(t)}
	r.announce(d.owner, "proj", 100, nostr.Tags{{"maintainers", d.maint.PK}})
	r.announce(d.maint, "proj", 100, nostr.Tags{{"maintainers", d.owner.PK}})
	d.work = workTree(t, map[string]string{"README.md": "# proj\n", "src/main.go": "package main\n\nfunc main() {}\n"}, "first")
	r.push(d.owner, "proj", d.work)
	d.coord = nip34.RepoRef{Pubkey: d.owner.PK, Identifier: "proj"}.String()
	d.base = git.RepoURLPath(nip34.Npub(d.owner.PK), "proj")
	return d
}

func (d *discussRig) issue(k key, at int64, subject, body string, extra ...nostr.Tag) *nostr.Event {
	e := k.sign(d.t, nip34.KindIssue, at, append(nostr.Tags{{"a", d.coord}, {"p", d.owner.PK}, {"subject", subject}}, extra...), body)
	d.save(e)
	return e
}

// comment publishes a NIP-22 comment on root answering parent (root
// itself for a top-level comment).
func (d *discussRig) comment(k key, at int64, root, parent *nostr.Event, body string, extra ...nostr.Tag) *nostr.Event {
	tags := nostr.Tags{{"E", root.ID, "", root.PubKey}, {"K", fmt.Sprint(root.Kind)}, {"P", root.PubKey},
		{"e", parent.ID, "", parent.PubKey}, {"k", fmt.Sprint(parent.Kind)}, {"p", parent.PubKey}}
	e := k.sign(d.t, nip34.KindComment, at, append(tags, extra...), body)
	d.save(e)
	return e
}

func (d *discussRig) status(k key, kind int, at int64, root *nostr.Event, extra ...nostr.Tag) {
	d.save(k.sign(d.t, kind, at, append(nostr.Tags{{"e", root.ID, "", "root"}, {"a", d.coord}}, extra...), ""))
}

func (d *discussRig) page(path string) string {
	d.t.Helper()
	status, body := d.get(path)
	if status != http.StatusOK {
		d.t.Fatalf("GET %s: %d\n%.2000s", path, status, body)
	}
	return body
}

// order checks that wants appear in body in this order.
func order(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	at := 0
	for _, w := range wants {
		i := strings.Index(body[at:], w)
		if i < 0 {
			t.Fatalf("%s: %q missing or out of order (after %d)", what, w, at)
		}
		at += i + len(w)
	}
}

// TestPages_IssuePage: an issue's page shows its body as sanitised
// Markdown, its comments threaded (NIP-22 replies under what they answer,
// legacy kind-1 replies too), its status history (the statuses of the
// author and maintainers only), its labels and subject edit and its cover
// note from keys that speak for it — a stranger's label, rename, status and
// cover note change nothing (issue 26 part 2; GitWorkshop v4 authority).
func TestPages_IssuePage(t *testing.T) {
	d := newDiscussRig(t, nil, env.Env{})
	reporter, stranger, helper := newKey(t), newKey(t), newKey(t)
	iss := d.issue(reporter, 200, "Crash on start", "It **crashes** on start.\n\n<script>alert(1)</script>\n\n- step one", nostr.Tag{"t", "bug"})
	c1 := d.comment(helper, 210, iss, iss, "Which *version*?")
	c2 := d.comment(reporter, 220, iss, c1, "Version 1.2, reply to the question")
	c3 := d.comment(d.maint, 230, iss, iss, "Confirmed here.")
	legacy := reporter.sign(t, nip34.KindNote, 240, nostr.Tags{{"e", iss.ID, "", "root"}, {"p", d.owner.PK}}, "A legacy kind-1 reply")
	d.save(legacy)
	d.status(d.maint, nip34.KindStatusClosed, 300, iss)
	d.status(reporter, nip34.KindStatusOpen, 310, iss)
	d.status(stranger, nip34.KindStatusClosed, 320, iss) // ignored
	label := func(k key, at int64, ns, v string) {
		d.save(k.sign(t, nip34.KindLabel, at, nostr.Tags{{"e", iss.ID, "", "root"}, {"L", ns}, {"l", v, ns}}, ""))
	}
	label(d.maint, 250, "#t", "needs-triage")
	label(stranger, 251, "#t", "spam-label")
	label(d.owner, 252, "#subject", "Crash on start with an empty config")
	label(stranger, 253, "#subject", "Stranger's title")
	cover := func(k key, at int64, text string) {
		d.save(k.sign(t, nip34.KindCoverNote, at, nostr.Tags{{"e", iss.ID, "", "root"}, {"p", reporter.PK}, {"k", "1621"}}, text))
	}
	cover(d.maint, 260, "Blocked on **the config rewrite**.")
	cover(stranger, 261, "Stranger's cover note")

	body := d.page(d.base + "/issues/" + iss.ID)
	mustContain(t, "issue page", body,
		"Crash on start with an empty config", "It <strong>crashes</strong> on start.", "<li>step one</li>",
		`<span class="badge st-open">open</span>`, `<span class="badge">bug</span>`, `<span class="badge">needs-triage</span>`,
		"Blocked on <strong>the config rewrite</strong>.", "Comments (4)",
		`id="c-`+c1.ID+`"`, `class="comment d1" id="c-`+c2.ID+`"`, `class="comment d0" id="c-`+c3.ID+`"`,
		"Which <em>version</em>?", "A legacy kind-1 reply",
		`renamed to “Crash on start with an empty config”`)
	mustNotContain(t, "issue page", body, "<script>alert", "spam-label", "Stranger&#39;s title", "Stranger's title", "Stranger&#39;s cover note")
	// threaded: a reply directly under what it answers, siblings oldest first
	order(t, "comments", body, "Which <em>version</em>?", "Version 1.2, reply to the question", "Confirmed here.", "A legacy kind-1 reply")
	// history: the maintainer's close and the author's reopen, not the stranger's close
	order(t, "history", body, "<h2>History</h2>", `st-closed">closed</span> by <code title="`+nip34.Npub(d.maint.PK),
		`st-open">open</span> by <code title="`+nip34.Npub(reporter.PK), "</ul>")
	hist := body[strings.Index(body, "<h2>History</h2>"):]
	hist = hist[:strings.Index(hist, "</ul>")]
	if strings.Contains(hist, nip34.Npub(stranger.PK)) {
		t.Errorf("the stranger's status is in the history:\n%s", hist)
	}
	// the link to the same discussion in the web client stays
	nevent, _ := nip19.EncodeEvent(iss.ID, []string{d.svc.RelayURL()}, reporter.PK)
	mustContain(t, "issue page", body, "/issues/"+nevent+`" rel="nofollow">open in a git-nostr client`)

	// not an issue of this repository, not an issue, not an id: 404
	other := reporter.sign(t, nip34.KindIssue, 200, nostr.Tags{{"a", nip34.RepoRef{Pubkey: stranger.PK, Identifier: "proj"}.String()}}, "elsewhere")
	d.save(other)
	for _, path := range []string{"/issues/" + other.ID, "/issues/" + c1.ID, "/issues/nothex", "/prs/" + iss.ID} {
		if status, _ := d.get(d.base + path); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, status)
		}
	}
}

// TestPages_ListsLinkToPagesAndCount: the issue and PR lists link each
// title to its page here and keep the web client's link; the tabs show
// how many are open, refreshed by the list pages at once and elsewhere
// within countsTTL (issue 26 part 2).
func TestPages_ListsLinkToPagesAndCount(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	d := newDiscussRig(t, nil, env.Env{Clock: clk})
	reporter := newKey(t)
	a := d.issue(reporter, 200, "First", "one")
	b := d.issue(reporter, 201, "Second", "two")
	closed := d.issue(reporter, 202, "Third", "three")
	d.status(d.maint, nip34.KindStatusClosed, 300, closed)
	pr := reporter.sign(t, nip34.KindPR, 210, nostr.Tags{{"a", d.coord}, {"subject", "Add feature"}, {"c", strings.Repeat("a", 40)}}, "")
	d.save(pr)

	body := d.page(d.base + "/issues")
	mustContain(t, "issues list", body, `href="`+d.base+`/issues/`+a.ID+`">First</a>`, `href="`+d.base+`/issues/`+b.ID+`">Second</a>`,
		`>Issues <span class="count">2</span>`, `>Pull requests and patches <span class="count">1</span>`, "web client</a>")
	nevent, _ := nip19.EncodeEvent(a.ID, []string{d.svc.RelayURL()}, reporter.PK)
	mustContain(t, "issues list", body, "/issues/"+nevent+`" rel="nofollow">web client`)
	body = d.page(d.base + "/prs")
	mustContain(t, "PR list", body, `href="`+d.base+`/prs/`+pr.ID+`">Add feature</a>`)

	// a new issue: the summary's count is the remembered one until
	// countsTTL has passed, the list's is fresh
	d.issue(reporter, 203, "Fourth", "four")
	mustContain(t, "summary before the TTL", d.page(d.base), `>Issues <span class="count">2</span>`)
	clk.Advance(countsTTL)
	mustContain(t, "summary after the TTL", d.page(d.base), `>Issues <span class="count">3</span>`)
	d.issue(reporter, 204, "Fifth", "five")
	mustContain(t, "issues list", d.page(d.base+"/issues"), `>Issues <span class="count">4</span>`)
	mustContain(t, "summary after a list view", d.page(d.base), `>Issues <span class="count">4</span>`)
}

// TestPages_CommentBounds: a discussion's comments are shown in pages of
// threadPage, a reply chain deeper than maxThreadDepth stays at that
// indentation and names what it answers (linking to its page), and past
// maxComments the oldest are left out with a note.
func TestPages_CommentBounds(t *testing.T) {
	d := newDiscussRig(t, nil, env.Env{})
	reporter := newKey(t)
	iss := d.issue(reporter, 200, "Long thread", "body")
	// a chain of 10 replies, then 110 top-level comments
	parent := iss
	var chain []*nostr.Event
	for i := 0; i < 10; i++ {
		parent = d.comment(reporter, int64(300+i), iss, parent, fmt.Sprintf("chain %d", i))
		chain = append(chain, parent)
	}
	for i := 0; i < 110; i++ {
		d.comment(reporter, int64(400+i), iss, iss, fmt.Sprintf("flat comment %03d", i))
	}
	body := d.page(d.base + "/issues/" + iss.ID)
	mustContain(t, "page 1", body, "Comments (120)", "Page 1 of 3", `href="?page=2#comments">later comments`,
		`class="comment d6" id="c-`+chain[6].ID+`"`, `class="comment d6" id="c-`+chain[9].ID+`"`,
		`in reply to <a href="?page=1#c-`+chain[8].ID+`"`, "flat comment 039")
	mustNotContain(t, "page 1", body, "flat comment 040", `class="comment d7"`)
	if n := strings.Count(body, `<div class="comment `); n != threadPage {
		t.Errorf("page 1 shows %d comments, want %d", n, threadPage)
	}
	body = d.page(d.base + "/issues/" + iss.ID + "?page=3")
	mustContain(t, "page 3", body, "Page 3 of 3", `href="?page=2#comments">earlier comments`, "flat comment 109")
	if n := strings.Count(body, `<div class="comment `); n != 20 {
		t.Errorf("page 3 shows %d comments, want 20", n)
	}

	// more than maxComments: the newest are read, the oldest left out
	big := d.issue(reporter, 200, "Flooded", "body")
	for i := 0; i < maxComments+5; i++ {
		d.comment(reporter, int64(1000+i), big, big, fmt.Sprintf("flood %04d", i))
	}
	body = d.page(d.base + "/issues/" + big.ID + "?page=21")
	mustContain(t, "flooded", body, fmt.Sprintf("Comments (%d)", maxComments), "the oldest are not shown", fmt.Sprintf("flood %04d", maxComments+4))
}

// prWork makes a branch "feature" off the pushed main with two commits.
func (d *discussRig) prWork(t *testing.T) (base, tip string) {
	base = gitIn(t, d.work, "rev-parse", "HEAD")
	gitIn(t, d.work, "checkout", "-q", "-b", "feature")
	commitFiles(t, d.work, map[string]string{"src/main.go": "package main\n\nfunc main() { run() }\n"}, "Call run")
	tip = commitFiles(t, d.work, map[string]string{"src/run.go": "package main\n\nfunc run() {}\n"}, "Add run")
	gitIn(t, d.work, "checkout", "-q", "main")
	return base, tip
}

// pushRef puts oid of the work tree at ref in the served repository.
func (d *discussRig) pushRef(t *testing.T, oid, ref string) {
	dir, _ := d.repos.Path(nip34.RepoRef{Pubkey: d.owner.PK, Identifier: "proj"})
	gitIn(t, d.work, "push", "-q", dir, oid+":"+ref)
}

// TestPages_PRPage: a PR's page shows its description, the commits between
// its base and its current tip (the latest PR update by its author), the
// file list with the diffstat linked into the diff, and the reviews — the
// newest per reviewer (issue 26 part 2, GitWorkshop 7321).
func TestPages_PRPage(t *testing.T) {
	d := newDiscussRig(t, nil, env.Env{})
	author, rev1, rev2 := newKey(t), newKey(t), newKey(t)
	base, tip := d.prWork(t)
	pr := author.sign(t, nip34.KindPR, 500, nostr.Tags{{"a", d.coord}, {"subject", "Add run"}, {"c", tip}, {"branch-name", "feature"}},
		"This adds `run`.\n\n1. call it\n2. define it")
	d.save(pr)
	d.pushRef(t, tip, "refs/nostr/"+pr.ID)
	review := func(k key, at int64, verdict, text string) {
		d.save(k.sign(t, nip34.KindReview, at, nostr.Tags{{"e", pr.ID, "", "root"}, {"p", author.PK}, {"s", verdict}}, text))
	}
	review(rev1, 510, "NACK", "Old verdict")
	review(rev1, 520, "ACK", "Looks *good* now")
	review(rev2, 515, "Changes Required", "Please add a test")
	d.comment(rev2, 530, pr, pr, "Inline remark", nostr.Tag{"f", "src/run.go"}, nostr.Tag{"line", "3"}, nostr.Tag{"c", tip})

	body := d.page(d.base + "/prs/" + pr.ID)
	mustContain(t, "PR page", body, "Add run", "This adds <code>run</code>.", "<li>call it</li>",
		"Commits (2)", ">Call run<", ">Add run<", "/commit/"+tip, "git fetch "+d.svc.CloneURL(d.owner.PK, "proj")+" refs/nostr/"+pr.ID,
		"2 files changed", `<a href="#f-0">src/main.go</a>`, `<a href="#f-1">src/run.go</a>`, `id="f-1">diff --git a/src/run.go b/src/run.go`,
		`<span class="add">+3</span>`, `<span class="add">+1</span> <span class="del">−1</span>`, `<span class="add">&#43;func run() {}</span>`,
		"Reviews (2)", `st-open">ACK</span>`, "Looks <em>good</em> now", `st-draft">Changes Required</span>`, "Please add a test",
		"on <code>src/run.go:3</code>", "Inline remark")
	mustNotContain(t, "PR page", body, "Old verdict", ">NACK<", ">first<")
	order(t, "PR page", body, "on <a href=\""+d.base+"/commit/"+base+"\"")

	// a PR update by the author moves the tip: one more commit shown
	gitIn(t, d.work, "checkout", "-q", "feature")
	tip2 := commitFiles(t, d.work, map[string]string{"src/run.go": "package main\n\nfunc run() { println(1) }\n"}, "Print in run")
	gitIn(t, d.work, "checkout", "-q", "main")
	upd := author.sign(t, nip34.KindPRUpdate, 600, nostr.Tags{{"a", d.coord}, {"E", pr.ID}, {"P", author.PK}, {"c", tip2}}, "")
	d.save(upd)
	d.pushRef(t, tip2, "refs/nostr/"+upd.ID)
	body = d.page(d.base + "/prs/" + pr.ID)
	mustContain(t, "PR page after an update", body, "Commits (3)", ">Print in run<", "refs/nostr/"+upd.ID, "revision 2")

	// a PR whose commits have not arrived says so
	lost := author.sign(t, nip34.KindPR, 700, nostr.Tags{{"a", d.coord}, {"subject", "Lost"}, {"c", strings.Repeat("b", 40)}}, "")
	d.save(lost)
	mustContain(t, "PR without its commits", d.page(d.base+"/prs/"+lost.ID), "have not reached this server")
}

// TestPages_PRDiffBound: a PR diff larger than MaxDiffBytes is cut with a
// note while its file list stays complete.
func TestPages_PRDiffBound(t *testing.T) {
	d := newDiscussRig(t, func(o *Options) { o.MaxDiffBytes = 4 << 10 }, env.Env{})
	author := newKey(t)
	gitIn(t, d.work, "checkout", "-q", "-b", "big")
	files := map[string]string{"a_big.txt": strings.Repeat("a line of text\n", 2000), "z_last.txt": "the last file\n"}
	tip := commitFiles(t, d.work, files, "Big change")
	pr := author.sign(t, nip34.KindPR, 500, nostr.Tags{{"a", d.coord}, {"subject", "Big"}, {"c", tip}}, "")
	d.save(pr)
	d.pushRef(t, tip, "refs/nostr/"+pr.ID)
	body := d.page(d.base + "/prs/" + pr.ID)
	mustContain(t, "big PR", body, "2 files changed", "a_big.txt", "z_last.txt", "+2000", "The diff was cut at 4 KiB")
	mustNotContain(t, "big PR", body, "&#43;the last file")
	if len(body) > 64<<10 {
		t.Errorf("the page is %d bytes for a 4 KiB diff bound", len(body))
	}
}

// TestPages_PatchPage: a patch series is shown as one diff: its patches in
// order with the file list over all of them; a patch by someone else that
// names the series is not part of it; a revision is linked.
func TestPages_PatchPage(t *testing.T) {
	d := newDiscussRig(t, nil, env.Env{})
	author, stranger := newKey(t), newKey(t)
	first := gitIn(t, d.work, "rev-parse", "HEAD")
	c1 := commitFiles(t, d.work, map[string]string{"src/main.go": "package main\n\nfunc main() { println(1) }\n"}, "Print one")
	c2 := commitFiles(t, d.work, map[string]string{"docs/notes.md": "notes\n"}, "Add notes")
	mail := func(oid string, n int) string {
		out := gitIn(t, d.work, "format-patch", "-1", "--stdout", fmt.Sprintf("--subject-prefix=PATCH %d/2", n), oid)
		return strings.Replace(out, "[PATCH "+fmt.Sprint(n)+"/2]", fmt.Sprintf("[PATCH %d/2]", n), 1)
	}
	_ = first
	root := author.sign(t, nip34.KindPatch, 500, nostr.Tags{{"a", d.coord}, {"t", "root"}, {"commit", c1}}, mail(c1, 1))
	d.save(root)
	second := author.sign(t, nip34.KindPatch, 500, nostr.Tags{{"a", d.coord}, {"e", root.ID, "", "root"}, {"commit", c2}}, mail(c2, 2))
	d.save(second)
	d.save(stranger.sign(t, nip34.KindPatch, 501, nostr.Tags{{"a", d.coord}, {"e", root.ID, "", "root"}},
		"Subject: [PATCH 3/2] Injected\n\ndiff --git a/evil b/evil\n"))
	revision := author.sign(t, nip34.KindPatch, 600, nostr.Tags{{"a", d.coord}, {"t", "root-revision"}, {"e", root.ID, "", "root"}}, "Subject: [PATCH v2] Print one, better\n")
	d.save(revision)
	d.comment(stranger, 700, root, root, "Nice series")

	body := d.page(d.base + "/prs/" + root.ID)
	mustContain(t, "patch page", body, "Patches (2)", "Print one", "Add notes", "2 files changed",
		`<span class="add">+1</span> <span class="del">−1</span>`, `href="#p-0-f-0">src/main.go</a>`, `href="#p-1-f-0">docs/notes.md</a>`,
		`<span class="add">&#43;func main() { println(1) }</span>`, `<span class="add">&#43;notes</span>`,
		`href="`+d.base+`/prs/`+revision.ID+`">Print one, better</a>`, "Nice series", "Comments (1)")
	mustNotContain(t, "patch page", body, "Injected", "evil", `<span class="badge">root</span>`)
	order(t, "patch page", body, "Patch 1: Print one", "Patch 2: Add notes")
	if !regexp.MustCompile(`patch by <code title="` + nip34.Npub(author.PK)).MatchString(body) {
		t.Error("the patch page does not name its author")
	}
}

// TestG08_DiscussionPagesShowNoPrivateEvent: with the server's reader
// check, an issue that also names a private repository has no page, is
// not listed and not counted, and a comment, status, label, cover note or
// review reaching a private repository is not shown on a public
// discussion (GRASP-08; the pages' visitor brings no key).
func TestG08_DiscussionPagesShowNoPrivateEvent(t *testing.T) {
	var vis *visibility.Visibility
	d := newDiscussRig(t, func(o *Options) {
		o.Readers = func(ctx context.Context, evt *nostr.Event) func(string) bool { return vis.Readers(ctx, evt) }
	}, env.Env{})
	secretOwner, reporter := newKey(t), newKey(t)
	secret := d.announce(secretOwner, "secret", 100, nostr.Tags{{"private", "true"}})
	secretCoord := nip34.RepoRef{Pubkey: secretOwner.PK, Identifier: "secret"}.String()
	src, err := roster.New(roster.Options{Events: d.store}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	vis, err = visibility.New(visibility.Options{Roster: src, Events: d.store, Records: &memkv.Privacy{}, Hosted: noRepos{}}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	vis.Observe(secret)

	public := d.issue(reporter, 200, "Public issue", "public body")
	hidden := d.issue(reporter, 201, "Private crossover", "secret body", nostr.Tag{"a", secretCoord})
	d.comment(reporter, 210, public, public, "visible comment")
	d.comment(reporter, 211, public, public, "secret comment", nostr.Tag{"a", secretCoord})
	d.status(d.maint, nip34.KindStatusClosed, 220, public, nostr.Tag{"a", secretCoord})
	d.save(d.maint.sign(t, nip34.KindLabel, 221, nostr.Tags{{"e", public.ID, "", "root"}, {"L", "#t"}, {"l", "secret-label", "#t"}, {"a", secretCoord}}, ""))
	d.save(d.maint.sign(t, nip34.KindCoverNote, 222, nostr.Tags{{"e", public.ID, "", "root"}, {"a", secretCoord}}, "secret cover"))
	// a reply to the hidden issue is private through its `E`
	d.comment(reporter, 230, hidden, hidden, "reply to the crossover")

	body := d.page(d.base + "/issues")
	mustContain(t, "issues list", body, "Public issue", `>Issues <span class="count">1</span>`)
	mustNotContain(t, "issues list", body, "Private crossover")
	if status, page := d.get(d.base + "/issues/" + hidden.ID); status != http.StatusNotFound || strings.Contains(page, "secret body") {
		t.Errorf("the private issue's page: %d", status)
	}
	body = d.page(d.base + "/issues/" + public.ID)
	mustContain(t, "public issue", body, "visible comment", "Comments (1)", `st-open">open</span>`)
	mustNotContain(t, "public issue", body, "secret comment", "secret-label", "secret cover", `st-closed">`, "reply to the crossover")
}

// TestPages_QueryUpToPagesPastTheStoreCap: a store answers one query with
// at most its max_limit events; a page's reader goes on from the oldest
// second it saw, so it gets the newest n, events sharing a second with
// the previous query's last included, and says whether more may exist.
func TestPages_QueryUpToPagesPastTheStoreCap(t *testing.T) {
	r := newRig(t, "https://git.example.org", nil)
	r.store.MaxLimit = 7
	k := newKey(t)
	for i := 0; i < 20; i++ {
		r.save(k.sign(t, nip34.KindNote, int64(100+i/3), nostr.Tags{{"t", "x"}}, fmt.Sprint(i))) // three per second
	}
	f := nostr.Filter{Kinds: []int{nip34.KindNote}}
	got, more, err := r.pages.queryUpTo(context.Background(), f, 14)
	if err != nil || len(got) != 14 || !more {
		t.Fatalf("14 of 20: got %d, more %v, %v", len(got), more, err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e.ID] {
			t.Fatalf("%s read twice", e.ID)
		}
		seen[e.ID] = true
		if e.CreatedAt < 102 {
			t.Errorf("an event of second %d is not among the newest 14", e.CreatedAt)
		}
	}
	got, more, err = r.pages.queryUpTo(context.Background(), f, 30)
	if err != nil || len(got) != 20 || more {
		t.Fatalf("all 20: got %d, more %v, %v", len(got), more, err)
	}
}

// noRepos lists no hosted repository (visibility.Hosted).
type noRepos struct{}

func (noRepos) List(context.Context) ([]nip34.RepoRef, error) { return nil, nil }
