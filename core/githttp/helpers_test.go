package githttp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/prometheus/client_golang/prometheus"
)

// fakeAuthority is the test Authority: states keyed by owner npub and
// identifier, PR tips by event id. Optional gates block calls of States:
// the first preCalls on pre, every later one on gate.
type fakeAuthority struct {
	mu       sync.Mutex
	states   map[string][]StateCandidate
	prs      map[string]string
	asked    []string
	pre      chan struct{}
	preCalls int
	gate     chan struct{}
	inFlight int
	maxIn    int
}

func newFakeAuthority() *fakeAuthority {
	return &fakeAuthority{states: map[string][]StateCandidate{}, prs: map[string]string{}}
}

func (f *fakeAuthority) addState(owner, id string, s StateCandidate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[owner+"/"+id] = append(f.states[owner+"/"+id], s)
}

func (f *fakeAuthority) setPR(eventID, tip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prs[eventID] = tip
}

func (f *fakeAuthority) States(ctx context.Context, repo nip34.RepoRef) ([]StateCandidate, error) {
	owner, id := repo.Npub(), repo.Identifier
	f.mu.Lock()
	f.asked = append(f.asked, owner+"/"+id)
	f.inFlight++
	f.maxIn = max(f.maxIn, f.inFlight)
	gate := f.gate
	if len(f.asked) <= f.preCalls {
		gate = f.pre
	}
	out := append([]StateCandidate(nil), f.states[owner+"/"+id]...)
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
	return out, nil
}

func (f *fakeAuthority) PRTip(ctx context.Context, eventID string) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tip, ok := f.prs[eventID]
	return tip, ok, nil
}

type recordHooks struct {
	mu     sync.Mutex
	pushes []PushResult
}

func (h *recordHooks) OnPush(ctx context.Context, res PushResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pushes = append(h.pushes, res)
}

func (h *recordHooks) all() []PushResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]PushResult(nil), h.pushes...)
}

type testServer struct {
	t     testing.TB
	repos *git.Repos
	auth  *fakeAuthority
	hooks *recordHooks
	srv   *httptest.Server
	reg   *prometheus.Registry
	h     *handler
}

func newTestServer(t testing.TB, opts Options) *testServer {
	return newTestServerOn(t, opts, clock.New())
}

// newTestServerOn is newTestServer with the handler's timers on clk.
func newTestServerOn(t testing.TB, opts Options, clk clock.Clock) *testServer {
	t.Helper()
	repos, err := git.NewRepos(git.RepoOptions{Root: filepath.Join(t.TempDir(), "git")}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, repos: repos, auth: newFakeAuthority(), hooks: &recordHooks{}, reg: prometheus.NewRegistry()}
	opts.Repos, opts.Authority, opts.Hooks = repos, ts.auth, ts.hooks
	ts.h = NewHandler(opts, env.Env{Clock: clk, Metrics: ts.reg}).(*handler)
	ts.srv = httptest.NewServer(ts.h)
	t.Cleanup(ts.srv.Close)
	return ts
}

// newRepo creates a bare repository for a fresh random owner.
func (ts *testServer) newRepo(id string) (owner, url string) {
	ts.t.Helper()
	owner = randomNpub(ts.t)
	if err := ts.repos.Create(context.Background(), ref(owner, id)); err != nil {
		ts.t.Fatal(err)
	}
	return owner, ts.srv.URL + git.RepoURLPath(owner, id)
}

// ref names the repository of an npub (as in a URL) and identifier.
func ref(owner, id string) nip34.RepoRef {
	hex, err := git.DecodeNpub(owner)
	if err != nil {
		panic(err)
	}
	return nip34.RepoRef{Pubkey: hex, Identifier: id}
}

func randomNpub(t testing.TB) string {
	t.Helper()
	var b [32]byte
	_, _ = rand.Read(b[:])
	n, err := git.EncodeNpub(hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func randomHex64() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func state(id string, createdAt int64, head string, refs ...string) StateCandidate {
	m := map[string]string{}
	for i := 0; i+1 < len(refs); i += 2 {
		m[refs[i]] = refs[i+1]
	}
	return StateCandidate{EventID: id, Author: "a", CreatedAt: createdAt, Refs: m, HEAD: head}
}

func (ts *testServer) get(path string, hdr ...string) (*http.Response, string) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.srv.URL+path, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp, b.String()
}

func (ts *testServer) refs(owner, id string) map[string]string {
	ts.t.Helper()
	refs, err := ts.repos.Refs(context.Background(), ref(owner, id))
	if err != nil {
		ts.t.Fatal(err)
	}
	return refs
}
