package server_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// chromium finds the browser. A missing one fails the test: CI installs it,
// and a skipped browser test would hide pages nobody looked at.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found in PATH: install it with `apt-get install -y chromium` (Debian package); this test loads the pages in headless Chromium")
	return ""
}

// artifacts is where the screenshots go: $GRASP_ARTIFACTS/pages, or
// artifacts/pages at the module root (ignored by git).
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GRASP_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	dir, _ = filepath.Abs(filepath.Join(dir, "pages"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is one headless Chromium driven over CDP; every page opens in a
// new tab with script execution disabled.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser, tied to the context it is given:
	// that must be ctx itself, not a shorter-lived one.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// view is a page as the browser laid it out at one width.
type view struct {
	dom  string
	text string // what a person reads: the body's innerText, laid out
	png  []byte
	// content is the width of what the page lays out, viewport the width
	// of the window it is shown in (CSS pixels): a page fits when content
	// is no wider than viewport (only its tables and code scroll, each in
	// its own box).
	content, viewport float64
	wide              string // the widest elements sticking out, when content does not fit
}

// load opens url with JavaScript off in a window width CSS pixels wide (a
// phone's, emulated as one, below 600) and returns its DOM (read through
// CDP's DOM domain, which needs no page script), its layout widths and a
// full-page PNG.
func (b *browser) load(url string, width int64) view {
	b.t.Helper()
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	ctx, cancelLimit := context.WithTimeout(tab, testwait.Limit(b.t))
	defer cancelLimit()
	var v view
	err := chromedp.Run(ctx,
		emulation.SetScriptExecutionDisabled(true),
		emulation.SetDeviceMetricsOverride(width, 900, 1, width < 600),
		chromedp.Navigate(url),
		chromedp.OuterHTML("html", &v.dom, chromedp.ByQuery),
		// DevTools' own evaluation runs with page scripts off
		chromedp.Evaluate(`document.body.innerText`, &v.text),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_, _, _, layout, _, content, err := page.GetLayoutMetrics().Do(ctx)
			if err == nil {
				v.content, v.viewport = content.Width, float64(layout.ClientWidth)
			}
			return err
		}),
		chromedp.FullScreenshot(&v.png, 100),
	)
	if err != nil {
		b.t.Fatalf("load %s in chromium: %v", url, err)
	}
	if v.content > float64(width)+0.5 || v.viewport > float64(width)+0.5 {
		// DevTools' own evaluation runs with page scripts off: name what
		// sticks out, for the failure message
		_ = chromedp.Run(ctx, chromedp.Evaluate(`[...document.querySelectorAll("body *")]
			.filter(e => e.getBoundingClientRect().right > `+strconv.FormatInt(width, 10)+` + 1 && !e.parentElement.closest("pre,.scroll,table"))
			.slice(0, 6).map(e => e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + " (" + Math.round(e.getBoundingClientRect().width) + " px): " + e.textContent.trim().slice(0, 50)).join("; ")`, &v.wide))
	}
	return v
}

var spaces = regexp.MustCompile(`\s+`)

// TestPages_BrowserShowsPages loads the landing page, a repository page, a
// tree, a file, a commit, the issues and PR lists, the issue, PR and patch
// pages and the "On this server" page of a pushed repository, and the
// publishing guide, in headless Chromium with JavaScript off, checks what
// a person would read, and keeps a screenshot of each (issue 16 part 3,
// issue 26 parts 2, 5 and 7). Each page is laid out at 390 px (a phone,
// emulated as one) and 1280 px and must fit: no page scrolls sideways,
// only its tables and code, each in its own box (issue 26 part 3); the
// screenshots are <page>-<width>.png.
func TestPages_BrowserShowsPages(t *testing.T) {
	bin := chromium(t)
	out := artifacts(t)
	e := newEnv(t, func(c *config.Config) { c.Relay.Name = "Browser test GRASP" })
	a, reporter := newKey(t), newKey(t)
	w := newWork(t)
	for p, c := range map[string]string{
		"README.md":  "# Demo project\n\nHello from the **README**.\n\n- one\n- two\n",
		"src/lib.go": "package src\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n",
		// what must not push a page wider than a phone: a long line of
		// code, a wide Markdown table, a long unbroken word
		"src/long.go": "package src\n\nvar Long = \"" + strings.Repeat("abcdefghij", 30) + "\"\n",
		"docs/wide.md": "# Wide\n\n| " + strings.Repeat("column | ", 14) + "\n|" + strings.Repeat("---|", 14) + "\n| " + strings.Repeat("value | ", 14) + "\n\n" +
			strings.Repeat("unbroken", 20) + "\n",
	} {
		os.MkdirAll(filepath.Join(w.dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(w.dir, p), []byte(c), 0o644)
	}
	mustGit(t, w.dir, "add", "-A")
	mustGit(t, w.dir, "commit", "-q", "-m", "add the library")
	tip := mustGit(t, w.dir, "rev-parse", "HEAD")
	e.release(a, "demo", w, tip, nostr.Tag{"name", "Demo project"}, nostr.Tag{"description", "A repository shown in a browser"})
	cl := e.dial()
	coord := nip34.RepoRef{Pubkey: a.PK, Identifier: "demo"}.String()
	issue := e.sign(reporter, nip34.KindIssue, nostr.Tags{{"a", coord}, {"p", a.PK}, {"subject", "The button is blue"}}, "It should be **purple**.")
	cl.mustAccept(issue, "")
	cl.mustAccept(e.sign(a, nip34.KindComment, nostr.Tags{{"E", issue.ID}, {"K", "1621"}, {"P", reporter.PK}, {"e", issue.ID}, {"k", "1621"}, {"p", reporter.PK}},
		"Which shade of purple?"), "")
	// a PR whose commit is pushed to refs/nostr/<id> first, and a patch
	mustGit(t, w.dir, "checkout", "-q", "-b", "purple")
	os.WriteFile(filepath.Join(w.dir, "src/color.go"), []byte("package src\n\n// Color is the button's.\nconst Color = \"purple\"\n"), 0o644)
	mustGit(t, w.dir, "add", "-A")
	mustGit(t, w.dir, "commit", "-q", "-m", "make the button purple")
	prTip := mustGit(t, w.dir, "rev-parse", "HEAD")
	patchText := mustGit(t, w.dir, "format-patch", "-1", "--stdout", "HEAD")
	mustGit(t, w.dir, "checkout", "-q", "main")
	pr := e.sign(reporter, nip34.KindPR, nostr.Tags{{"a", coord}, {"p", a.PK}, {"subject", "Purple button"}, {"c", prTip}, {"clone", e.cloneURL(a, "demo")}},
		"Makes the button purple, as asked.")
	if out, err := w.push(e.cloneURL(a, "demo"), prTip+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push the PR's commit: %v\n%s", err, out)
	}
	cl.mustAccept(pr, "")
	patch := e.sign(reporter, nip34.KindPatch, nostr.Tags{{"a", coord}, {"p", a.PK}, {"t", "root"}, {"commit", prTip}}, patchText)
	cl.mustAccept(patch, "")

	repo := e.base + "/" + a.Npub + "/demo.git"
	pages := []struct {
		name, url string
		want      []string
	}{
		{"landing", e.base + "/", []string{"Browser test GRASP", "Hosted repositories", "1 repository", "Demo project", "grasp test"}},
		{"repo", repo, []string{"Demo project", "A repository shown in a browser", "Hello from the README", "git clone " + repo,
			"nostr://" + a.Npub + "/", "naddr1",
			"main HEAD", "add the library", "Owner: " + a.Npub}},
		{"tree", repo + "/tree/main/src", []string{"lib.go", "Branch main"}},
		{"commits", repo + "/commits", []string{"add the library"}},
		{"file-history", repo + "/commits/main/src/lib.go", []string{"that change", "src/lib.go", "add the library"}},
		{"refs", repo + "/refs", []string{"Branches", "main"}},
		{"markdown", repo + "/blob/main/docs/wide.md", []string{"Wide", "column", "value"}},
		{"long-line", repo + "/blob/main/src/long.go", []string{"var Long"}},
		{"not-found", repo + "/blob/main/nothing-here", []string{"Not found"}},
		{"file", repo + "/blob/main/src/lib.go", []string{"// Answer is the answer.", "func Answer() int { return 42 }"}},
		{"blame", repo + "/blame/main/src/lib.go", []string{"Normal view", "func Answer() int { return 42 }", tip[:7]}},
		{"commit", repo + "/commit/" + tip, []string{"add the library", tip, "+func Answer() int { return 42 }", "+# Demo project"}},
		{"issues", repo + "/issues", []string{"Open issues", "The button is blue", "open", "web client"}},
		{"issue", repo + "/issues/" + issue.ID, []string{"The button is blue", "It should be purple", "Comments (1)", "Which shade of purple?"}},
		{"prs", repo + "/prs", []string{"Purple button", "make the button purple"}},
		{"pr", repo + "/prs/" + pr.ID, []string{"Purple button", "Makes the button purple, as asked.", "Commits (1)", "1 file changed",
			"src/color.go", `+const Color = "purple"`}},
		{"status", repo + "/status", []string{"Signed state and served refs", "in sync", "Nothing waits", "Maintainers", "Owner: " + a.Npub}},
		{"publishing", e.base + "/publishing", []string{"Publishing a repository to a grasp server", "Without ngit", "This server is " + e.base}},
		{"patch", repo + "/prs/" + patch.ID, []string{"make the button purple", "Patches (1)", "src/color.go", `+const Color = "purple"`}},
	}
	br := newBrowser(t, bin)
	// Positive control: scripts really are off in these tabs.
	if v := br.load(`data:text/html,<h1 id="h">static</h1><script>document.getElementById("h").textContent="scripted"</script>`, 1280); !strings.Contains(v.dom, ">static<") {
		t.Fatalf("JavaScript ran in the test browser: %s", v.dom)
	}
	// Positive control: the width check sees a page wider than a phone.
	if v := br.load(`data:text/html,<meta name="viewport" content="width=device-width"><div style="width:600px">wide</div>`, 390); v.content <= 390 {
		t.Fatalf("a 600 px wide page measured %v px at 390 px: the width check cannot fail", v.content)
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			// a phone (390 CSS pixels, issue 26 part 3) and a desktop
			for _, width := range []int64{390, 1280} {
				v := br.load(p.url, width)
				text := spaces.ReplaceAllString(v.text, " ")
				for _, w := range p.want {
					if !strings.Contains(text, w) {
						t.Errorf("%s at %d px with JavaScript off: a reader does not see %q; the page reads:\n%.2000s", p.name, width, w, text)
					}
				}
				if strings.Contains(strings.ToLower(v.dom), "<script") {
					t.Errorf("%s carries a script; pages must need none", p.name)
				}
				if v.content > float64(width)+0.5 || v.viewport > float64(width)+0.5 {
					t.Errorf("%s at %d px: the page is %v px wide in a %v px viewport, so it scrolls sideways (tables and code must scroll in their own box); sticking out: %s",
						p.name, width, v.content, v.viewport, v.wide)
				}
				if !bytes.HasPrefix(v.png, []byte("\x89PNG")) || len(v.png) < 5000 {
					t.Fatalf("screenshot of %s: %d bytes, not a PNG of a page", p.name, len(v.png))
				}
				if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("%s-%d.png", p.name, width)), v.png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	t.Logf("screenshots in %s", out)
}
