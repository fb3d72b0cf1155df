package git

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// testStore is a Repos whose repositories are also served over HTTP by
// git's own http-backend (read-only), for the fetches of the hunter's
// Fetch: the store is tested without grasp's git handler (core/githttp).
type testStore struct {
	t     testing.TB
	repos *Repos
	srv   *httptest.Server
	h     http.Handler // what srv serves
}

func newTestStore(t testing.TB) *testStore {
	t.Helper()
	repos, err := NewRepos(RepoOptions{Root: filepath.Join(t.TempDir(), "git")}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env: append(testkit.GitClientEnv(), "GIT_PROJECT_ROOT="+repos.Root(), "GIT_HTTP_EXPORT_ALL=1",
			// serve any object by id, as grasp's handler does (G01-G6)
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=uploadpack.allowAnySHA1InWant", "GIT_CONFIG_VALUE_0=true"),
	}
	ts := &testStore{t: t, repos: repos, srv: httptest.NewServer(backend), h: backend}
	t.Cleanup(ts.srv.Close)
	return ts
}

// newRepo creates a bare repository for a fresh random owner.
func (ts *testStore) newRepo(id string) (owner, url string) {
	ts.t.Helper()
	owner = randomNpub(ts.t)
	if err := ts.repos.Create(context.Background(), ref(owner, id)); err != nil {
		ts.t.Fatal(err)
	}
	return owner, ts.srv.URL + RepoURLPath(owner, id)
}

// pushedRepo is a repository whose main holds one commit x, pushed
// straight into the bare repository, and its URL.
func pushedRepo(t *testing.T, ts *testStore, id string) (owner, url, work, x string) {
	t.Helper()
	owner, url = ts.newRepo(id)
	work = testkit.GitWork(t)
	x = testkit.Git(t, work, "rev-parse", "HEAD")
	dir, _ := ts.repos.Path(ref(owner, id))
	testkit.Git(t, work, "push", "-q", dir, "main")
	return owner, url, work, x
}

// ref names the repository of an npub (as in a URL) and identifier.
func ref(owner, id string) nip34.RepoRef {
	hex, err := DecodeNpub(owner)
	if err != nil {
		panic(err)
	}
	return nip34.RepoRef{Pubkey: hex, Identifier: id}
}

func randomNpub(t testing.TB) string {
	t.Helper()
	var b [32]byte
	_, _ = rand.Read(b[:])
	n, err := EncodeNpub(hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
