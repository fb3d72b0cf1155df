package hosting

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testlog"
)

// countingStore is the main store, counting the queries by kind so a test
// can tell how often an operation read announcements and states.
type countingStore struct {
	mu      sync.Mutex
	inner   *slicestore.SliceStore
	queries map[int]int
}

func (c *countingStore) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range f.Kinds {
		c.queries[k]++
	}
	// slicestore is not safe for concurrent use: drain under the lock
	ch, err := c.inner.QueryEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make(chan *nostr.Event, 64)
	var evs []*nostr.Event
	for e := range ch {
		evs = append(evs, e)
	}
	go func() {
		defer close(out)
		for _, e := range evs {
			out <- e
		}
	}()
	return out, nil
}

func (c *countingStore) save(t *testing.T, evt *nostr.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.inner.SaveEvent(context.Background(), evt); err != nil {
		t.Fatal(err)
	}
}

func (c *countingStore) reset() map[int]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queries
	c.queries = map[int]int{}
	return q
}

// storeAll re-checks every released event as storable.
type storeAll struct{}

func (storeAll) Decide(context.Context, *nostr.Event, policy.Meta) policy.Decision {
	return policy.Decision{Outcome: policy.Store}
}

type rig struct {
	t         *testing.T
	h         *Hosting
	store     *countingStore
	purg      *purgatory.Purgatory
	repos     *git.Repos
	published []*nostr.Event
	logs      *testlog.Buffer // the info log of every part
}

func newRig(t *testing.T) *rig {
	t.Helper()
	st := &countingStore{inner: &slicestore.SliceStore{}, queries: map[int]int{}}
	if err := st.inner.Init(); err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	e := env.Env{Clock: clock.NewFake(time.Now()), Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})}
	p, err := purgatory.New(purgatory.Options{KV: &memkv.KV{}}, e)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := git.NewRepos(git.RepoOptions{Root: filepath.Join(t.TempDir(), "git")}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, store: st, purg: p, repos: repos, logs: logs}
	r.h, err = New(Options{Events: st, Purgatory: p, Repos: repos, Rules: storeAll{},
		Publish: func(_ context.Context, evt *nostr.Event) error {
			r.published = append(r.published, evt)
			st.save(t, evt)
			return nil
		},
		Spawn: func(func(context.Context)) {}, // no adoption in these tests
	}, e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

type key struct{ testkit.Key }

func newKey(t testing.TB) key { return key{testkit.NewKey(t)} }

func (k key) sign(t *testing.T, kind int, tags nostr.Tags) *nostr.Event {
	return k.Sign(t, &nostr.Event{Kind: kind, Tags: tags, CreatedAt: nostr.Now()})
}

// commit makes a commit and pushes it into repo's bare directory, as a
// push would have (the handler is not under test here).
func (r *rig) commit(repo nip34.RepoRef) string {
	r.t.Helper()
	work := r.t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", work}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+work)
		out, err := cmd.CombinedOutput()
		if err != nil {
			r.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "f"), []byte("x"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	run("add", "f")
	run("commit", "-q", "-m", "x")
	dir, _ := r.repos.Path(repo)
	run("push", "-q", dir, "main:refs/heads/main")
	return run("rev-parse", "HEAD")
}

// A push reads each author's announcement and the states once, however
// many steps it takes (propagate to another maintainer's repo, release in
// both, align to the latest state): the view is built once per operation.
func TestPushReadsTheRepositoryOnce(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	a, b := newKey(t), newKey(t)
	repoA, repoB := nip34.RepoRef{Pubkey: a.PK, Identifier: "r"}, nip34.RepoRef{Pubkey: b.PK, Identifier: "r"}
	// a's announcement lists b as maintainer; both are held, with their repos
	annA := a.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}, {"maintainers", b.PK}})
	// b lists a back: under maintainers-v3.md §3 an unanswered listing
	// makes b no maintainer of a's repo.
	annB := b.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}, {"maintainers", a.PK}})
	for _, x := range []struct {
		evt  *nostr.Event
		repo nip34.RepoRef
	}{{annA, repoA}, {annB, repoB}} {
		d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: x.repo}}}
		if _, err := r.h.Hold(ctx, x.evt, d, policy.Meta{}); err != nil {
			t.Fatal(err)
		}
		if !r.repos.Exists(x.repo) {
			t.Fatalf("held announcement's repo %s not created", x.repo)
		}
	}
	// b pushes to a's repo what b's state says
	tip := r.commit(repoA)
	st := b.sign(t, nip34.KindState, nostr.Tags{{"d", "r"}, {"refs/heads/main", tip}, {"HEAD", "ref: refs/heads/main"}})
	d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.AwaitGitData, Repo: repoA, OIDs: []string{tip}}}}
	if _, err := r.h.Hold(ctx, st, d, policy.Meta{}); err != nil {
		t.Fatal(err)
	}
	c, _ := candidate(st)
	r.store.reset()
	r.h.OnPush(ctx, githttp.PushResult{Repo: repoA, State: &c})

	q := r.store.reset()
	// Announcements are read by author (core/roster, F03): once for each of
	// the two authors; the states once.
	if q[nip34.KindAnnouncement] != 2 || q[nip34.KindState] != 1 {
		t.Fatalf("the push read announcements %d times and states %d times, want once per author (2) and once", q[nip34.KindAnnouncement], q[nip34.KindState])
	}
	if len(r.published) != 3 || r.purg.Len() != 0 {
		t.Fatalf("published %d events with %d still held, want both announcements and the state released", len(r.published), r.purg.Len())
	}
	for _, repo := range []nip34.RepoRef{repoA, repoB} {
		refs, err := r.repos.Refs(ctx, repo)
		if err != nil || refs["refs/heads/main"] != tip {
			t.Fatalf("%s refs %v (%v), want main at the state's tip", repo, refs, err)
		}
	}
}

// A held announcement that expires loses its empty bare repo (G01-P5); one
// whose repo has data keeps it for the operator.
func TestSweepRetiresOnlyEmptyRepos(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	empty, full := newKey(t), newKey(t)
	for _, k := range []key{empty, full} {
		repo := nip34.RepoRef{Pubkey: k.PK, Identifier: "r"}
		d := policy.Decision{Outcome: policy.Hold, Effects: []policy.Effect{{Kind: policy.CreateRepo, Repo: repo}}}
		if _, err := r.h.Hold(ctx, k.sign(t, nip34.KindAnnouncement, nostr.Tags{{"d", "r"}}), d, policy.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	r.commit(nip34.RepoRef{Pubkey: full.PK, Identifier: "r"})
	r.h.clk.(*clock.Fake).Advance(time.Hour)
	if err := r.h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if r.repos.Exists(nip34.RepoRef{Pubkey: empty.PK, Identifier: "r"}) {
		t.Fatal("the expired announcement's empty repo was kept")
	}
	if !r.repos.Exists(nip34.RepoRef{Pubkey: full.PK, Identifier: "r"}) {
		t.Fatal("a repo with git data was removed")
	}
}
