package pages

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// key is testkit's throwaway identity; its sign takes the Unix seconds the
// pages tests compute with.
type key struct{ testkit.Key }

func newKey(t testing.TB) key { return key{testkit.NewKey(t)} }

func (k key) sign(t testing.TB, kind int, at int64, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	return k.Sign(t, &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: tags, Content: content})
}

// rig is a Pages over a temporary git root and an in-memory store.
type rig struct {
	t      testing.TB
	repos  *git.Repos
	store  *slicestore.SliceStore
	pages  *Pages
	server *httptest.Server
	svc    nip34.Service
	reg    *prometheus.Registry
}

func newRig(t testing.TB, publicURL string, mod func(*Options)) *rig {
	t.Helper()
	return newRigEnv(t, publicURL, mod, env.Env{})
}

// newRigEnv is newRig with an environment (a fake clock).
func newRigEnv(t testing.TB, publicURL string, mod func(*Options), e env.Env) *rig {
	t.Helper()
	repos, err := git.NewRepos(git.RepoOptions{Root: filepath.Join(t.TempDir(), "git")}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	store := &slicestore.SliceStore{}
	store.Init()
	src, err := roster.New(roster.Options{Events: store}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := nip34.ParseService(publicURL)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Service: svc, Name: "Test GRASP", Description: "A server for tests", Version: "v9.8.7",
		Repos: repos, Events: store, Roster: src,
		// a render is never cut by the machine's load in a test; the
		// budget's own test sets it and drives the clock
		RenderBudget: testwait.Limit(t),
		Snapshots:    githttp.NewHandler(githttp.Options{Repos: repos}, env.Env{}).(githttp.Snapshots)}
	if mod != nil {
		mod(&opts)
	}
	if e.Metrics == nil {
		e.Metrics = prometheus.NewRegistry()
	}
	reg, _ := e.Metrics.(*prometheus.Registry)
	p, err := New(opts, e)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, repos: repos, store: store, pages: p, svc: svc, reg: reg}
	r.server = httptest.NewServer(http.StripPrefix(svc.Path, p))
	t.Cleanup(r.server.Close)
	return r
}

func (r *rig) save(evt *nostr.Event) {
	r.t.Helper()
	if err := r.store.SaveEvent(context.Background(), evt); err != nil {
		r.t.Fatal(err)
	}
}

// announce stores owner's announcement of d listing this service.
func (r *rig) announce(owner key, d string, at int64, extra nostr.Tags) *nostr.Event {
	tags := nostr.Tags{{"d", d}, {"clone", r.svc.CloneURL(owner.PK, d)}, {"relays", r.svc.RelayURL()}}
	evt := owner.sign(r.t, nip34.KindAnnouncement, at, append(tags, extra...), "")
	r.save(evt)
	return evt
}

// get fetches a path (base path included) and returns status and body.
func (r *rig) get(path string) (int, string) {
	r.t.Helper()
	resp, err := http.Get(r.server.URL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// push creates repo and pushes the work tree's branches and tags into it
// (straight into the bare repository: these tests are about reading).
func (r *rig) push(owner key, d, work string) nip34.RepoRef {
	r.t.Helper()
	repo := nip34.RepoRef{Pubkey: owner.PK, Identifier: d}
	if err := r.repos.Create(context.Background(), repo); err != nil {
		r.t.Fatal(err)
	}
	dir, _ := r.repos.Path(repo)
	gitIn(r.t, work, "push", "-q", "--force", dir, "refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")
	return repo
}

func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada Author", "GIT_AUTHOR_EMAIL=ada@example.org",
		"GIT_COMMITTER_NAME=Ada Author", "GIT_COMMITTER_EMAIL=ada@example.org",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// workTree makes a work tree with files (path -> content) committed on
// main with message.
func workTree(t testing.TB, files map[string]string, message string) string {
	t.Helper()
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	commitFiles(t, dir, files, message)
	return dir
}

func commitFiles(t testing.TB, dir string, files map[string]string, message string) string {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", message)
	return gitIn(t, dir, "rev-parse", "HEAD")
}

func mustContain(t testing.TB, what, body string, wants ...string) {
	t.Helper()
	failed := false
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", what, w)
			failed = true
		}
	}
	if failed {
		if i := strings.Index(body, "<main>"); i >= 0 {
			body = body[i:]
		}
		t.Logf("%s:\n%.3000s", what, body)
	}
}

func mustNotContain(t testing.TB, what, body string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(body, b) {
			t.Errorf("%s contains %q", what, b)
		}
	}
}

// metric is the value of the counter or gauge name whose labels include
// labels ("k", "v", ...), summed over the matching series; 0 when there
// is none.
func (r *rig) metric(name string, labels ...string) float64 {
	r.t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		r.t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// pageText is what a reader sees of a page's HTML: its text without tags,
// unescaped.
func pageText(body string) string {
	return html.UnescapeString(tagRE.ReplaceAllString(body, ""))
}
