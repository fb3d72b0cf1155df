package server

import (
	"bytes"
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
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

// load opens url with JavaScript off and returns its DOM (read through
// CDP's DOM domain, which needs no page script) and a full-page PNG.
func (b *browser) load(url string) (dom string, png []byte) {
	b.t.Helper()
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	ctx, cancelLimit := context.WithTimeout(tab, testwait.Limit(b.t))
	defer cancelLimit()
	err := chromedp.Run(ctx,
		emulation.SetScriptExecutionDisabled(true),
		chromedp.Navigate(url),
		chromedp.OuterHTML("html", &dom, chromedp.ByQuery),
		chromedp.FullScreenshot(&png, 100),
	)
	if err != nil {
		b.t.Fatalf("load %s in chromium: %v", url, err)
	}
	return dom, png
}

var (
	invisible = regexp.MustCompile(`(?is)<(style|script|head)\b.*?</(style|script|head)>`)
	tags      = regexp.MustCompile(`(?s)<[^>]*>`)
	spaces    = regexp.MustCompile(`\s+`)
)

// visibleText approximates what a person reads on a page from its DOM.
func visibleText(dom []byte) string {
	s := invisible.ReplaceAllString(string(dom), " ")
	s = tags.ReplaceAllString(s, " ")
	return spaces.ReplaceAllString(html.UnescapeString(s), " ")
}

// TestPages_BrowserShowsPages loads the landing page, a repository page, a
// tree, a file, a commit, the issues and PR lists, the issue, PR and
// patch pages and the "On this server" page of a pushed repository in headless Chromium with JavaScript
// off, checks what a person would read, and keeps a screenshot of each
// (issue 16 part 3, issue 26 parts 2 and 5).
func TestPages_BrowserShowsPages(t *testing.T) {
	bin := chromium(t)
	out := artifacts(t)
	e := newEnv(t, func(c *config.Config) { c.Relay.Name = "Browser test GRASP" })
	a, reporter := newKey(t), newKey(t)
	w := newWork(t)
	for p, c := range map[string]string{
		"README.md":  "# Demo project\n\nHello from the **README**.\n\n- one\n- two\n",
		"src/lib.go": "package src\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n",
	} {
		os.MkdirAll(filepath.Join(w.dir, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(w.dir, p), []byte(c), 0o644)
	}
	mustGit(t, w.dir, "add", "-A")
	mustGit(t, w.dir, "commit", "-q", "-m", "add the library")
	tip := mustGit(t, w.dir, "rev-parse", "HEAD")
	e.release(a, "demo", w, tip, nostr.Tag{"name", "Demo project"}, nostr.Tag{"description", "A repository shown in a browser"})
	cl := e.dial()
	coord := nip34.RepoRef{Pubkey: a.pk, Identifier: "demo"}.String()
	issue := e.sign(reporter, nip34.KindIssue, nostr.Tags{{"a", coord}, {"p", a.pk}, {"subject", "The button is blue"}}, "It should be **purple**.")
	cl.mustAccept(issue, "")
	cl.mustAccept(e.sign(a, nip34.KindComment, nostr.Tags{{"E", issue.ID}, {"K", "1621"}, {"P", reporter.pk}, {"e", issue.ID}, {"k", "1621"}, {"p", reporter.pk}},
		"Which shade of purple?"), "")
	// a PR whose commit is pushed to refs/nostr/<id> first, and a patch
	mustGit(t, w.dir, "checkout", "-q", "-b", "purple")
	os.WriteFile(filepath.Join(w.dir, "src/color.go"), []byte("package src\n\n// Color is the button's.\nconst Color = \"purple\"\n"), 0o644)
	mustGit(t, w.dir, "add", "-A")
	mustGit(t, w.dir, "commit", "-q", "-m", "make the button purple")
	prTip := mustGit(t, w.dir, "rev-parse", "HEAD")
	patchText := mustGit(t, w.dir, "format-patch", "-1", "--stdout", "HEAD")
	mustGit(t, w.dir, "checkout", "-q", "main")
	pr := e.sign(reporter, nip34.KindPR, nostr.Tags{{"a", coord}, {"p", a.pk}, {"subject", "Purple button"}, {"c", prTip}, {"clone", e.cloneURL(a, "demo")}},
		"Makes the button purple, as asked.")
	if out, err := w.push(e.cloneURL(a, "demo"), prTip+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push the PR's commit: %v\n%s", err, out)
	}
	cl.mustAccept(pr, "")
	patch := e.sign(reporter, nip34.KindPatch, nostr.Tags{{"a", coord}, {"p", a.pk}, {"t", "root"}, {"commit", prTip}}, patchText)
	cl.mustAccept(patch, "")

	repo := e.base + "/" + a.npub + "/demo.git"
	pages := []struct {
		name, url string
		want      []string
	}{
		{"landing", e.base + "/", []string{"Browser test GRASP", "Hosted repositories", "1 repository", "Demo project", "grasp test"}},
		{"repo", repo, []string{"Demo project", "A repository shown in a browser", "Hello from the README", "git clone " + repo,
			"main HEAD", "add the library", "Owner: " + a.npub}},
		{"tree", repo + "/tree/main/src", []string{"lib.go", "Branch main"}},
		{"file", repo + "/blob/main/src/lib.go", []string{"// Answer is the answer.", "func Answer() int { return 42 }"}},
		{"commit", repo + "/commit/" + tip, []string{"add the library", tip, "+func Answer() int { return 42 }", "+# Demo project"}},
		{"issues", repo + "/issues", []string{"Open issues", "The button is blue", "open", "web client"}},
		{"issue", repo + "/issues/" + issue.ID, []string{"The button is blue", "It should be purple", "Comments (1)", "Which shade of purple?"}},
		{"prs", repo + "/prs", []string{"Purple button", "make the button purple"}},
		{"pr", repo + "/prs/" + pr.ID, []string{"Purple button", "Makes the button purple, as asked.", "Commits (1)", "1 file changed",
			"src/color.go", `+const Color = "purple"`}},
		{"status", repo + "/status", []string{"Signed state and served refs", "in sync", "Nothing waits", "Maintainers", "Owner: " + a.npub}},
		{"patch", repo + "/prs/" + patch.ID, []string{"make the button purple", "Patches (1)", "src/color.go", `+const Color = "purple"`}},
	}
	br := newBrowser(t, bin)
	// Positive control: scripts really are off in these tabs.
	if dom, _ := br.load(`data:text/html,<h1 id="h">static</h1><script>document.getElementById("h").textContent="scripted"</script>`); !strings.Contains(dom, ">static<") {
		t.Fatalf("JavaScript ran in the test browser: %s", dom)
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			dom, png := br.load(p.url)
			text := visibleText([]byte(dom))
			for _, w := range p.want {
				if !strings.Contains(text, w) {
					t.Errorf("%s with JavaScript off: a reader does not see %q; the page reads:\n%.2000s", p.name, w, text)
				}
			}
			if strings.Contains(strings.ToLower(dom), "<script") {
				t.Errorf("%s carries a script; pages must need none", p.name)
			}
			if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 5000 {
				t.Fatalf("screenshot of %s: %d bytes, not a PNG of a page", p.name, len(png))
			}
			if err := os.WriteFile(filepath.Join(out, p.name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("screenshots in %s", out)
}
