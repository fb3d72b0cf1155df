package hosting

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
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

// rules is the re-check a release runs: every event is storable unless
// the test refuses its id (a ban or deletion made while it was held).
type rules struct{ refuse map[string]string }

func (p rules) Decide(_ context.Context, evt *nostr.Event, _ policy.Meta) policy.Decision {
	if msg, ok := p.refuse[evt.ID]; ok {
		return policy.Decision{Outcome: policy.Rejected, Msg: msg}
	}
	return policy.Decision{Outcome: policy.Store}
}

// hunter records what the effects ask of the git-data hunter.
type hunter struct {
	needs  []hunt.Need
	forgot []string // event ids
}

func (h *hunter) Need(n hunt.Need)                       { h.needs = append(h.needs, n) }
func (h *hunter) ForgetEvent(_ nip34.RepoRef, id string) { h.forgot = append(h.forgot, id) }

// rigOptions are what a test sets beyond the defaults: no hunter, no
// re-evaluation, archive mode off, no /prs/ TTL.
type rigOptions struct {
	hunter  bool
	ingest  bool
	archive *archive.Scope
	service nip34.Service
	prsTTL  time.Duration
	purg    purgatory.Options // KV is the rig's
}

type rig struct {
	t         *testing.T
	h         *Hosting
	store     *countingStore
	purg      *purgatory.Purgatory
	repos     *git.Repos
	clk       *clock.Fake
	published []*nostr.Event
	logs      *testlog.Buffer // the info log of every part
	// refuse: ids the release re-check refuses, with the message;
	// failPublish: ids whose publication fails.
	refuse      map[string]string
	failPublish map[string]bool
	hunter      *hunter        // nil without rigOptions.hunter
	ingested    []*nostr.Event // re-evaluated through Options.Ingest
	spawned     []func(context.Context)
}

func newRig(t *testing.T) *rig { return newRigWith(t, rigOptions{}) }

func newRigWith(t *testing.T, ro rigOptions) *rig {
	t.Helper()
	st := &countingStore{inner: &slicestore.SliceStore{}, queries: map[int]int{}}
	if err := st.inner.Init(); err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	clk := clock.NewFake(time.Now())
	e := env.Env{Clock: clk, Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})}
	po := ro.purg
	po.KV = &memkv.KV{}
	p, err := purgatory.New(po, e)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := git.NewRepos(git.RepoOptions{Root: filepath.Join(t.TempDir(), "git")}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, store: st, purg: p, repos: repos, clk: clk, logs: logs, refuse: map[string]string{}, failPublish: map[string]bool{}}
	opts := Options{Events: st, Purgatory: p, Repos: repos, Rules: rules{r.refuse},
		Publish: func(_ context.Context, evt *nostr.Event) error {
			if r.failPublish[evt.ID] {
				return errors.New("store full")
			}
			r.published = append(r.published, evt)
			st.save(t, evt)
			return nil
		},
		// work after the request is run by the test (runSpawned)
		Spawn:   func(fn func(context.Context)) { r.spawned = append(r.spawned, fn) },
		Archive: ro.archive, Service: ro.service, PRsTTL: ro.prsTTL,
	}
	if ro.hunter {
		r.hunter = &hunter{}
		opts.Hunter = r.hunter
	}
	if ro.ingest {
		opts.Ingest = func(_ context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result {
			if meta.Source != policy.SourceRecheck {
				t.Errorf("re-evaluated %s as source %q, want %q", evt.ID, meta.Source, policy.SourceRecheck)
			}
			r.ingested = append(r.ingested, evt)
			return outcome.Result{Kind: outcome.Stored}
		}
	}
	r.h, err = New(opts, e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runSpawned runs the work the effects left for after the request (an
// adoption, a re-evaluation), as the server's background runner would.
func (r *rig) runSpawned() {
	for len(r.spawned) > 0 {
		fn := r.spawned[0]
		r.spawned = r.spawned[1:]
		fn(context.Background())
	}
}

// isPublished reports whether evt was published (stored and broadcast).
func (r *rig) isPublished(evt *nostr.Event) bool {
	return slices.ContainsFunc(r.published, func(p *nostr.Event) bool { return p.ID == evt.ID })
}

// held reports whether evt waits in purgatory.
func (r *rig) held(evt *nostr.Event) bool {
	_, ok := r.purg.Get(evt.ID)
	return ok
}

// hold holds evt as d says, failing the test on an error.
func (r *rig) hold(evt *nostr.Event, effects ...policy.Effect) {
	r.t.Helper()
	if _, err := r.h.Hold(context.Background(), evt, policy.Decision{Outcome: policy.Hold, Effects: effects}, policy.Meta{}); err != nil {
		r.t.Fatalf("hold %s: %v", evt.ID, err)
	}
}

// announce holds k's announcement of d (tags after d) with its bare repo,
// as the rules decide for a new repository.
func (r *rig) announce(k key, d string, tags ...nostr.Tag) (*nostr.Event, nip34.RepoRef) {
	r.t.Helper()
	repo := nip34.RepoRef{Pubkey: k.PK, Identifier: d}
	ann := k.sign(r.t, nip34.KindAnnouncement, append(nostr.Tags{{"d", d}}, tags...))
	r.hold(ann, policy.Effect{Kind: policy.CreateRepo, Repo: repo})
	return ann, repo
}

// refs reads repo's refs, failing the test when they cannot be read.
func (r *rig) refs(repo nip34.RepoRef) map[string]string {
	r.t.Helper()
	refs, err := r.repos.Refs(context.Background(), repo)
	if err != nil {
		r.t.Fatalf("refs of %s: %v", repo.URLPath(), err)
	}
	return refs
}

// state signs k's state of d pointing main at tip (HEAD at main).
func (k key) state(t *testing.T, d, tip string) *nostr.Event {
	return k.sign(t, nip34.KindState, nostr.Tags{{"d", d}, {"refs/heads/main", tip}, {"HEAD", "ref: refs/heads/main"}})
}

// pushed is what the git handler reports after a push to repo: the state
// it aligned to (nil: none), the refs/nostr placeholders it created.
func pushed(repo nip34.RepoRef, state *nostr.Event, remote string, bytes int64, placeholders map[string]string) githttp.PushResult {
	res := githttp.PushResult{Repo: repo, Remote: remote, PlaceholderBytes: bytes}
	if state != nil {
		c, _ := candidate(state)
		res.State = &c
	}
	for _, id := range slices.Sorted(maps.Keys(placeholders)) {
		res.Placeholders = append(res.Placeholders, githttp.Placeholder{EventID: id, Tip: placeholders[id]})
	}
	return res
}

type key struct{ testkit.Key }

func newKey(t testing.TB) key { return key{testkit.NewKey(t)} }

func (k key) sign(t *testing.T, kind int, tags nostr.Tags) *nostr.Event {
	return k.Sign(t, &nostr.Event{Kind: kind, Tags: tags, CreatedAt: nostr.Now()})
}

// commit makes a commit and pushes it into repo's bare directory, as a
// push would have (the handler is not under test here).
func (r *rig) commit(repo nip34.RepoRef) string { return r.commitTo(repo, "refs/heads/main", "x") }

// commitTo pushes a new commit of a file holding content to ref of repo
// and returns its id: distinct contents make distinct commits.
func (r *rig) commitTo(repo nip34.RepoRef, ref, content string) string {
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
	if err := os.WriteFile(filepath.Join(work, "f"), []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	run("add", "f")
	run("commit", "-q", "-m", "x")
	dir, _ := r.repos.Path(repo)
	run("push", "-q", "--force", dir, "HEAD:"+ref)
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

// New refuses options without the collaborators every effect needs, and
// a second registration of its metrics.
func TestNewNeedsItsCollaborators(t *testing.T) {
	r := newRig(t)
	ok := Options{Events: r.store, Purgatory: r.purg, Repos: r.repos, Rules: rules{}, Publish: func(context.Context, *nostr.Event) error { return nil }}
	for name, strip := range map[string]func(*Options){
		"Events": func(o *Options) { o.Events = nil }, "Purgatory": func(o *Options) { o.Purgatory = nil },
		"Repos": func(o *Options) { o.Repos = nil }, "Rules": func(o *Options) { o.Rules = nil }, "Publish": func(o *Options) { o.Publish = nil },
	} {
		o := ok
		strip(&o)
		if _, err := New(o, env.Env{}); err == nil {
			t.Errorf("New without %s succeeded", name)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := New(ok, env.Env{Metrics: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(ok, env.Env{Metrics: reg}); err == nil {
		t.Error("a second registration of the same metrics succeeded")
	}
}
