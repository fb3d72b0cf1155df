package hunt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	gitrepo "github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/prometheus/client_golang/prometheus"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// fixture: server A holds main (c1 <- c2), server B holds side (c1 <- c3).
type fixture struct {
	c1, c2, c3 string
	rootA      string
	rootB      string
	local      string // directory of this server's bare repos
	repos      *gitrepo.Repos
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is required: %v", err)
	}
	base := t.TempDir()
	w := filepath.Join(base, "work")
	git(t, base, "init", "-q", "-b", "main", w)
	commit := func(file, text string) string {
		if err := os.WriteFile(filepath.Join(w, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, w, "add", file)
		git(t, w, "commit", "-q", "-m", text)
		return git(t, w, "rev-parse", "HEAD")
	}
	f := &fixture{rootA: filepath.Join(base, "A"), rootB: filepath.Join(base, "B"), local: filepath.Join(base, "local")}
	f.c1 = commit("f", "one")
	f.c2 = commit("f", "two")
	git(t, w, "checkout", "-q", "-b", "side", f.c1)
	f.c3 = commit("g", "three")
	for _, d := range []string{f.rootA, f.rootB, f.local} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git(t, base, "init", "-q", "--bare", filepath.Join(f.rootA, "r.git"))
	git(t, base, "init", "-q", "--bare", filepath.Join(f.rootB, "r.git"))
	git(t, w, "push", "-q", filepath.Join(f.rootA, "r.git"), "main:refs/heads/main")
	git(t, w, "push", "-q", filepath.Join(f.rootB, "r.git"), "side:refs/heads/side")
	repos, err := gitrepo.NewRepos(gitrepo.RepoOptions{Root: f.local}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	f.repos = repos
	return f
}

// localRepo creates this server's bare repository repoN(id).
func (f *fixture) localRepo(t *testing.T, id string) {
	t.Helper()
	if err := f.repos.Create(context.Background(), repoN(id)); err != nil {
		t.Fatal(err)
	}
}

// localPath is the directory of this server's repository repoN(id).
func (f *fixture) localPath(id string) string {
	dir, _ := f.repos.Path(repoN(id))
	return dir
}

func (f *fixture) gitContext() *GitContext {
	return &GitContext{Repos: f.repos, Timeout: time.Minute, AllowPrivate: true}
}

// gitServer serves root over smart HTTP with git http-backend, counting
// requests in flight; delay holds each request open that long so that
// concurrent fetches overlap.
type gitServer struct {
	*httptest.Server
	inFlight, max, total atomic.Int64
}

func serveGit(t *testing.T, root string, delay time.Duration) *gitServer {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}, Stderr: io.Discard}
	s := &gitServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		s.total.Add(1)
		for {
			m := s.max.Load()
			if n <= m || s.max.CompareAndSwap(m, n) {
				break
			}
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestG02_4_GitFetchBringsObjectsOnlyTheRemoteHas(t *testing.T) {
	f := newFixture(t)
	srv := serveGit(t, f.rootA, 0)
	f.localRepo(t, "r")
	gc := f.gitContext()
	r := repoN("r")
	ctx := context.Background()
	if got, err := gc.Has(ctx, r, []string{f.c1, f.c2}); err != nil || len(got) != 0 {
		t.Fatalf("Has before fetch: %v %v", got, err)
	}
	// c2 is a branch tip; c1 is only reachable. Both are wanted by id.
	got, err := gc.Fetch(ctx, r, srv.URL+"/r.git", []string{f.c2})
	if err != nil || !reflect.DeepEqual(got, []string{f.c2}) {
		t.Fatalf("Fetch: %v %v", got, err)
	}
	// Full history, never shallow: the parent arrived too.
	if has, _ := gc.Has(ctx, r, []string{f.c1}); len(has) != 1 {
		t.Fatal("parent commit missing: the fetch was shallow")
	}
	if _, err := os.Stat(filepath.Join(f.localPath("r"), "shallow")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("local repo is shallow: %v", err)
	}
	f.localRepo(t, "r2")
	got, err = gc.Fetch(ctx, repoN("r2"), srv.URL+"/r.git", []string{f.c1})
	if err != nil || !reflect.DeepEqual(got, []string{f.c1}) {
		t.Fatalf("Fetch of a non-tip commit: %v %v", got, err)
	}
}

func TestG02_MissingOIDAmongPresentOnesStillFetchesTheRest(t *testing.T) {
	f := newFixture(t)
	srv := serveGit(t, f.rootA, 0)
	f.localRepo(t, "r")
	gc := f.gitContext()
	absent := strings.Repeat("de", 20)
	// c3 lives on server B only; absent lives nowhere.
	want := []string{absent, f.c2, f.c3, f.c1}
	got, err := gc.Fetch(context.Background(), repoN("r"), srv.URL+"/r.git", want)
	if !reflect.DeepEqual(sorted(got), sorted([]string{f.c1, f.c2})) {
		t.Fatalf("fetched %v, want c1 and c2 despite the missing ones (err %v)", got, err)
	}
	var fe *FetchError
	if !errors.As(err, &fe) || fe.Kind != KindMissing || !reflect.DeepEqual(sorted(fe.Missing), sorted([]string{absent, f.c3})) {
		t.Fatalf("error %v, want KindMissing naming the two absent objects", err)
	}
}

func TestG02_8_DeadHostIsNetworkAndNaughty(t *testing.T) {
	f := newFixture(t)
	f.localRepo(t, "r")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + ln.Addr().String() + "/r.git"
	ln.Close()
	gc := f.gitContext()
	_, err = gc.Fetch(context.Background(), repoN("r"), deadURL, []string{f.c2})
	if KindOf(err) != KindNetwork {
		t.Fatalf("closed port: kind %v (%v), want network", KindOf(err), err)
	}

	// Through the hunter: listed naughty, the round backs off, and the next
	// round does not knock again.
	clk := clock.NewFake(t0)
	h, err := New(withSync(DefaultOptions(), gc), env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	hs := runReal(t, h, clk)
	h.Need(Need{Repo: repoN("r"), OIDs: []string{f.c2}, Sources: []string{deadURL}, FromSync: true})
	hs.advance(time.Second, 500*time.Millisecond)
	st := h.Stats()
	if !reflect.DeepEqual(st.Naughty, []string{ln.Addr().String()}) || st.Repos != 1 || st.Hunting != 0 || st.Fetches != 1 {
		t.Fatalf("stats %+v, want the host naughty and the repo in backoff", st)
	}
	hs.advance(time.Minute, 10*time.Second)
	if st := h.Stats(); st.Fetches != 1 {
		t.Fatalf("naughty host fetched again: %+v", st)
	}
}

// runReal runs h on clk until the test ends.
func runReal(t *testing.T, h *Hunter, clk *clock.Fake) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &harness{t: t, clk: clk, h: h}
}

func TestG02_HunterAggregatesObjectsFromTwoServers(t *testing.T) {
	f := newFixture(t)
	a, b := serveGit(t, f.rootA, 0), serveGit(t, f.rootB, 0)
	f.localRepo(t, "r")
	gc := f.gitContext()
	var mu sync.Mutex
	arrived := 0
	gc.OnArrived = func(context.Context, nip34.RepoRef) { mu.Lock(); arrived++; mu.Unlock() }
	clk := clock.NewFake(t0)
	opts := DefaultOptions()
	opts.SelfHosts = []string{"grasp.example"}
	h, err := New(withSync(opts, gc), env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	hs := runReal(t, h, clk)
	h.Need(Need{Repo: repoN("r"), OIDs: []string{f.c2, f.c3}, EventID: "state", FromSync: true,
		Sources: []string{"https://grasp.example/npub1x/r.git", a.URL + "/r.git", b.URL + "/r.git"}})
	hs.advance(time.Second, 500*time.Millisecond)
	if has, _ := gc.Has(context.Background(), repoN("r"), []string{f.c1, f.c2, f.c3}); len(has) != 3 {
		t.Fatalf("objects present %v, want all three", has)
	}
	st := h.Stats()
	mu.Lock()
	defer mu.Unlock()
	if st.Repos != 0 || st.OIDsFetched != 2 || arrived != 2 {
		t.Fatalf("stats %+v arrived %d", st, arrived)
	}
}

func TestG02_8_RealHostNeverSeesMoreThanTheLimit(t *testing.T) {
	f := newFixture(t)
	srv := serveGit(t, f.rootA, 30*time.Millisecond)
	gc := f.gitContext()
	clk := clock.NewFake(t0)
	opts := DefaultOptions()
	opts.Limits = func(context.Context, string) throttle.Limits {
		return throttle.Limits{Concurrency: 2, PerMinute: 100}
	}
	h, err := New(withSync(opts, gc), env.Env{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	hs := runReal(t, h, clk)
	const repos = 6
	for i := 0; i < repos; i++ {
		id := fmt.Sprintf("r%d", i)
		f.localRepo(t, id)
		if err := os.Symlink(filepath.Join(f.rootA, "r.git"), filepath.Join(f.rootA, id+".git")); err != nil {
			t.Fatal(err)
		}
		h.Need(Need{Repo: repoN(id), OIDs: []string{f.c2}, Sources: []string{srv.URL + "/" + id + ".git"}, FromSync: true})
	}
	hs.advance(time.Second, 500*time.Millisecond)
	if st := h.Stats(); st.Repos != 0 || st.Fetches != repos {
		t.Fatalf("stats %+v, want every repo fetched once", st)
	}
	if m := srv.max.Load(); m > 2 || m < 1 {
		t.Fatalf("server saw %d requests at once, limit 2", m)
	}
}

func TestClassifyGitErrors(t *testing.T) {
	for _, tc := range []struct {
		stderr string
		want   Kind
	}{
		{"fatal: unable to access 'https://nx.invalid/r.git/': Could not resolve host: nx.invalid", KindNetwork},
		{"fatal: unable to access 'http://127.0.0.1:9/r.git/': Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server", KindNetwork},
		{"fatal: unable to access 'https://x/r.git/': SSL certificate problem: self-signed certificate", KindNetwork},
		{"fatal: remote error: upload-pack: not our ref " + strings.Repeat("de", 20), KindMissing},
		{"error: Server does not allow request for unadvertised object " + strings.Repeat("ab", 20), KindMissing},
		{"fatal: repository 'https://x/r.git/' not found", KindProtocol},
		{"fatal: unable to access 'https://x/r.git/': The requested URL returned error: 503", KindProtocol},
		{"error: RPC failed; curl 18 transfer closed with outstanding read data remaining", KindProtocol},
		{"fatal: cannot change to '/srv/x.git': No such file or directory", KindLocal},
		{"fatal: unable to access 'https://x/r.git/': Operation too slow. Less than 1000 bytes/sec transferred the last 60 seconds", KindProtocol},
		{"", KindOther},
	} {
		if got := Classify(tc.stderr); got != tc.want {
			t.Errorf("Classify(%q) = %v, want %v", tc.stderr, got, tc.want)
		}
	}
}

func TestGitContextRefusesNonHTTPSources(t *testing.T) {
	f := newFixture(t)
	f.localRepo(t, "r")
	gc := f.gitContext()
	for _, u := range []string{"file://" + f.rootA + "/r.git", f.rootA + "/r.git", "ext::sh -c touch% /tmp/pwned"} {
		got, err := gc.Fetch(context.Background(), repoN("r"), u, []string{f.c2})
		if len(got) != 0 || KindOf(err) != KindRefused {
			t.Errorf("Fetch(%q) = %v, %v; want refused", u, got, err)
		}
	}
	if _, err := gc.Has(context.Background(), repoN("nope"), []string{f.c2}); err == nil {
		t.Error("Has on a missing repository did not fail")
	}
}

type fixedVersion struct {
	v   gitrepo.Version
	err error
}

func (f fixedVersion) Version(context.Context) (gitrepo.Version, error) { return f.v, f.err }

// Audit F18d: git before 2.37 ignores http.curloptResolve silently, which
// would drop the address pin. With the guard on, such a git keeps the
// hunter from starting: it queues nothing, fetches nothing, says why in the
// log and reports grasp_hunt_enabled 0.
func TestAbuse_F18d_HunterRefusesAGitThatCannotPin(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		v            gitrepo.Version
		err          error
		allowPrivate bool
		ok           bool
	}{
		{gitrepo.Version{Major: 2, Minor: 36, Patch: 6}, nil, false, false},
		{gitrepo.Version{Major: 2, Minor: 30, Patch: 2}, nil, false, false},
		{gitrepo.Version{Major: 2, Minor: 37, Patch: 0}, nil, false, true},
		{gitrepo.Version{Major: 2, Minor: 39, Patch: 5}, nil, false, true},
		{gitrepo.Version{}, errors.New("exec: git: not found"), false, false},
		{gitrepo.Version{Major: 2, Minor: 30, Patch: 2}, nil, true, true}, // nothing is pinned then
	} {
		err := CheckGit(ctx, fixedVersion{c.v, c.err}, c.allowPrivate)
		if (err == nil) != c.ok {
			t.Errorf("CheckGit(%v, %v, private=%v) = %v, want ok=%v", c.v, c.err, c.allowPrivate, err, c.ok)
		}
		if err != nil && c.err == nil && !strings.Contains(err.Error(), "2.37") {
			t.Errorf("the refusal does not name the version needed: %v", err)
		}
	}

	sc := newFakeSC(clock.NewFake(time.Unix(1_700_000_000, 0)))
	reg := prometheus.NewRegistry()
	h, err := New(Options{Sync: sc, Disabled: CheckGit(ctx, fixedVersion{v: gitrepo.Version{Major: 2, Minor: 30, Patch: 2}}, false)},
		env.Env{Clock: sc.clk, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := gauge(reg, "grasp_hunt_enabled"); !ok || v != 0 {
		t.Fatalf("grasp_hunt_enabled = %v (exported %v), want 0", v, ok)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.Run(runCtx) }()
	h.Need(Need{Repo: repoN("r"), OIDs: []string{oid("a")}, Sources: []string{"https://git.example.com/r.git"}, FromSync: true})
	if err := h.Recheck(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := h.Stats(); st.Repos != 0 || st.Fetches != 0 || len(sc.calls) != 0 {
		t.Fatalf("a disabled hunter queued or fetched: %+v, calls %v", st, sc.calls)
	}
}

func gauge(reg *prometheus.Registry, name string) (float64, bool) {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// A fetch the bare-repository store refuses itself (an object id or a URL
// it will not hand to git) is this server's failure, KindLocal: the
// source's host is not blamed for it. git.Repos says so with a typed
// outcome.Invalid, not a text prefix (issue 28 part 1).
func TestFetchRefusedLocallyIsLocal(t *testing.T) {
	f := newFixture(t)
	f.localRepo(t, "r")
	g := f.gitContext()
	for name, c := range map[string]struct{ url, oid string }{
		"bad object id": {"https://example.com/r.git", "not-an-oid"},
		"option as URL": {"--upload-pack=touch /tmp/x", f.c1},
	} {
		ferr := g.fetchOnce(context.Background(), repoN("r"), c.url, nil, []string{c.oid})
		if ferr == nil || ferr.Kind != KindLocal {
			t.Errorf("%s: fetch failure %+v, want KindLocal", name, ferr)
		}
	}
}
