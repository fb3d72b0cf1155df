package git

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// The hunter's fetch into a hosted repository waits for the repository's
// lock like a push does: a fetch never writes while another write (push,
// alignment, deletion) is under way, and only objects arrive, no ref moves.
func TestFetchTakesTheRepositoryLock(t *testing.T) {
	ts := newTestStore(t)
	_, srcURL, _, x := pushedRepo(t, ts, "proj")
	dst, _ := ts.newRepo("proj")
	repo := ref(dst, "proj")
	dir, _ := ts.repos.Path(repo)

	unlock, err := ts.repos.locks.acquire(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		stderr string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		stderr, err := ts.repos.Fetch(context.Background(), repo, FetchSpec{URL: srcURL, OIDs: []string{x}})
		done <- result{stderr, err}
	}()
	// the fetch is queued on the lock the test holds
	testwait.For(t, "the fetch to queue on the lock", func() bool {
		ts.repos.locks.mu.Lock()
		defer ts.repos.locks.mu.Unlock()
		return ts.repos.locks.locks[dir] != nil && ts.repos.locks.locks[dir].refs == 2
	})
	if has, _ := ts.repos.HasObjects(context.Background(), repo, []string{x}); has[x] {
		t.Fatal("the fetch wrote while the repository was locked")
	}
	unlock()
	if r := <-done; r.err != nil {
		t.Fatalf("fetch: %v\n%s", r.err, r.stderr)
	}
	if has, _ := ts.repos.HasObjects(context.Background(), repo, []string{x}); !has[x] {
		t.Fatal("the fetched commit is missing")
	}
	if refs, _ := ts.repos.Refs(context.Background(), repo); len(refs) != 0 {
		t.Fatalf("a fetch of objects moved refs: %v", refs)
	}
}

// Fetch runs http(s) only and names what the remote lacks in English.
func TestFetchRefusesOtherTransportsAndReportsMissingObjects(t *testing.T) {
	ts := newTestStore(t)
	_, srcURL, _, _ := pushedRepo(t, ts, "proj")
	dst, _ := ts.newRepo("proj")
	repo := ref(dst, "proj")
	srcDir, _ := ts.repos.Path(ref(strings.Split(strings.TrimPrefix(srcURL, ts.srv.URL+"/"), "/")[0], "proj"))
	if _, err := ts.repos.Fetch(context.Background(), repo, FetchSpec{URL: "file://" + srcDir, OIDs: []string{strings.Repeat("a", 40)}}); err == nil {
		t.Fatal("a file:// fetch ran")
	}
	absent := strings.Repeat("de", 20)
	stderr, err := ts.repos.Fetch(context.Background(), repo, FetchSpec{URL: srcURL, OIDs: []string{absent}})
	if err == nil || !strings.Contains(stderr, "not our ref") {
		t.Fatalf("fetch of an absent object: %v, stderr %q", err, stderr)
	}
	if _, err := ts.repos.Fetch(context.Background(), repo, FetchSpec{URL: srcURL, OIDs: []string{"HEAD~1"}}); err == nil || !strings.HasPrefix(err.Error(), "invalid:") {
		t.Fatalf("a revision expression reached git fetch: %v", err)
	}
}

// List is the one listing of hosted repositories.
func TestListNamesEveryHostedRepository(t *testing.T) {
	ts := newTestStore(t)
	a, _ := ts.newRepo("one")
	b, _ := ts.newRepo("my repo 🚀")
	if err := ts.repos.Create(context.Background(), ref(a, "two")); err != nil {
		t.Fatal(err)
	}
	got, err := ts.repos.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []nip34.RepoRef{ref(a, "one"), ref(a, "two"), ref(b, "my repo 🚀")}
	key := func(r nip34.RepoRef) string { return r.String() }
	sort.Slice(got, func(i, j int) bool { return key(got[i]) < key(got[j]) })
	sort.Slice(want, func(i, j int) bool { return key(want[i]) < key(want[j]) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}
