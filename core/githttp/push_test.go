package githttp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

func TestG01G2a_OwnerStatePushAccepted(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	ts.auth.addState(owner, "proj", state("s1", 10, "ref: refs/heads/main", "refs/heads/main", x))

	testkit.Git(t, work, "push", url, "main")

	if got := ts.refs(owner, "proj")["refs/heads/main"]; got != x {
		t.Fatalf("main = %q, want %q", got, x)
	}
	pushes := ts.hooks.all()
	if len(pushes) != 1 || pushes[0].StateEventID != "s1" || pushes[0].Repo != ref(owner, "proj") {
		t.Fatalf("OnPush calls = %+v", pushes)
	}
}

// pushRejected pushes and checks that git fails, prints the reason and
// that the repository's refs did not change (G01-G9).
func pushRejected(t *testing.T, ts *testServer, owner, id, work string, want string, args ...string) {
	t.Helper()
	before := ts.refs(owner, id)
	out, err := testkit.GitTry(work, append([]string{"push"}, args...)...)
	if err == nil {
		t.Fatalf("push %v succeeded, want rejection:\n%s", args, out)
	}
	if !strings.Contains(out, "authorisation failed") || !strings.Contains(out, want) {
		t.Fatalf("push output lacks %q:\n%s", want, out)
	}
	after := ts.refs(owner, id)
	if len(after) != len(before) {
		t.Fatalf("refs changed by a rejected push: %v -> %v", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("refs changed by a rejected push: %v -> %v", before, after)
		}
	}
}

func TestG01G2b_WrongCommitRejected(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	testkit.GitCommit(t, work, "z")
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x))
	pushRejected(t, ts, owner, "proj", work, "doesn't match push", url, "main")
	if n := len(ts.hooks.all()); n != 0 {
		t.Fatalf("OnPush called %d times for a rejected push", n)
	}
	// No objects were written either: git never ran.
	if out := testkit.Git(t, filepath.Join(ts.repos.Root(), owner, "proj.git"), "count-objects", "-v"); !strings.Contains(out, "count: 0") || !strings.Contains(out, "packs: 0") {
		t.Fatalf("rejected push left objects:\n%s", out)
	}
}

func TestG01G2c_NoStateRejected(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	pushRejected(t, ts, owner, "proj", work, "No state events", url, "main")
}

func TestG01G2d_FullAlignment(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	testkit.Git(t, work, "checkout", "-q", "-b", "dev")
	y := testkit.GitCommit(t, work, "y")
	testkit.Git(t, work, "checkout", "-q", "main")
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x, "refs/heads/dev", y))
	testkit.Git(t, work, "push", url, "main", "dev")

	x2 := testkit.GitCommit(t, work, "x2")
	// State keeps dev: pushing main alone aligns fully.
	ts.auth.addState(owner, "proj", state("s2", 20, "", "refs/heads/main", x2, "refs/heads/dev", y))
	testkit.Git(t, work, "push", url, "main")

	x3 := testkit.GitCommit(t, work, "x3")
	// State drops dev: pushing main alone would leave dev behind.
	ts.auth.addState(owner, "proj", state("s3", 30, "", "refs/heads/main", x3))
	pushRejected(t, ts, owner, "proj", work, "refs/heads/dev is not in the state", url, "main")
	testkit.Git(t, work, "push", url, "main", ":dev")
	refs := ts.refs(owner, "proj")
	if refs["refs/heads/main"] != x3 || refs["refs/heads/dev"] != "" {
		t.Fatalf("refs after aligned push = %v", refs)
	}
}

func TestG01G2e_AnnotatedTagWithPeeledEntry(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	testkit.Git(t, work, "tag", "-a", "v1", "-m", "release")
	tagObj := testkit.Git(t, work, "rev-parse", "refs/tags/v1")
	if tagObj == x {
		t.Fatal("expected an annotated tag object")
	}
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x, "refs/tags/v1", tagObj, "refs/tags/v1^{}", x))
	testkit.Git(t, work, "push", url, "main", "v1")
	if got := ts.refs(owner, "proj")["refs/tags/v1"]; got != tagObj {
		t.Fatalf("tag = %q, want %q", got, tagObj)
	}
}

func TestG01G2f_NoopPushAcceptedWithoutState(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	if err := ts.repos.Create(context.Background(), ref(owner, "proj")); err != nil {
		t.Fatal(err)
	}
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x))
	testkit.Git(t, work, "push", url, "main")
	// The state disappears (e.g. expired); an identical push is a no-op.
	ts.auth.mu.Lock()
	ts.auth.states = map[string][]StateCandidate{}
	ts.auth.mu.Unlock()
	out := testkit.Git(t, work, "push", url, "main")
	if !strings.Contains(out, "Everything up-to-date") {
		t.Fatalf("no-op push output: %s", out)
	}
	// A hand-made no-op command (old == new) also passes authorisation.
	res := Authorize(map[string]string{"refs/heads/main": x}, []git.RefUpdate{{Ref: "refs/heads/main", Old: x, New: x}}, nil, nil)
	if !res.Allowed || res.Class != ClassNoop {
		t.Fatalf("no-op push: %+v", res)
	}
}

// G01-G2g/h/i as the git layer sees them: the Authority is asked for the
// URL's owner and identifier, and a state it does not return for that
// repository (another owner's, an unauthorised author's) authorises nothing.
func TestG01G2i_StatesScopedToURLOwner(t *testing.T) {
	ts := newTestServer(t, Options{})
	ownerA, urlA := ts.newRepo("proj")
	ownerB, _ := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	ts.auth.addState(ownerB, "proj", state("sB", 10, "", "refs/heads/main", x))
	pushRejected(t, ts, ownerA, "proj", work, "No state events", urlA, "main")
	ts.auth.mu.Lock()
	asked := ts.auth.asked
	ts.auth.mu.Unlock()
	if len(asked) != 1 || asked[0] != ownerA+"/proj" {
		t.Fatalf("Authority asked for %v, want [%s/proj]", asked, ownerA)
	}
}

func TestG01G3_LatestStateWins(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	y := testkit.GitCommit(t, work, "y")
	ts.auth.addState(owner, "proj", state("old", 10, "", "refs/heads/main", x))
	ts.auth.addState(owner, "proj", state("new", 20, "", "refs/heads/main", y))
	pushRejected(t, ts, owner, "proj", work, "doesn't match", url, x+":refs/heads/main")
	testkit.Git(t, work, "push", url, "main")
	if p := ts.hooks.all(); len(p) != 1 || p[0].StateEventID != "new" {
		t.Fatalf("pushes = %+v", p)
	}
}

func TestG01G4_HeadFollowsState(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	testkit.Git(t, work, "checkout", "-q", "-b", "dev")
	y := testkit.GitCommit(t, work, "y")
	ts.auth.addState(owner, "proj", state("s1", 10, "ref: refs/heads/dev", "refs/heads/main", x, "refs/heads/dev", y))
	testkit.Git(t, work, "push", url, "main", "dev")

	_, body := ts.get(git.RepoURLPath(owner, "proj") + "/info/refs?service=git-upload-pack")
	if !strings.Contains(body, "symref=HEAD:refs/heads/dev") {
		t.Fatalf("advertisement lacks symref=HEAD:refs/heads/dev:\n%q", body)
	}
	clone := filepath.Join(t.TempDir(), "c")
	testkit.Git(t, "", "clone", "-q", url, clone)
	if b := testkit.Git(t, clone, "rev-parse", "--abbrev-ref", "HEAD"); b != "dev" {
		t.Fatalf("clone checked out %q, want dev", b)
	}
}

func TestG01G4_PropagateToOtherMaintainer(t *testing.T) {
	ts := newTestServer(t, Options{})
	ownerB, urlB := ts.newRepo("proj")
	ownerA, urlA := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	st := state("sB", 10, "ref: refs/heads/main", "refs/heads/main", x)
	ts.auth.addState(ownerB, "proj", st)
	testkit.Git(t, work, "push", urlB, "main")

	ctx := context.Background()
	missing := randomNpub(t) // a maintainer without a repository here is skipped
	if err := ts.repos.Propagate(ctx, ref(ownerB, "proj"), []git.Target{{Repo: ref(ownerA, "proj"), Borrow: true}, {Repo: ref(missing, "proj"), Borrow: true}, {Repo: ref(ownerB, "proj"), Borrow: true}}, st.Refs, st.HEAD); err != nil {
		t.Fatal(err)
	}
	out := testkit.Git(t, "", "ls-remote", urlA)
	if !strings.Contains(out, x+"\trefs/heads/main") {
		t.Fatalf("A's repo does not advertise the propagated ref:\n%s", out)
	}
	dirA := filepath.Join(ts.repos.Root(), ownerA, "proj.git")
	if cnt := testkit.Git(t, dirA, "count-objects", "-v"); !strings.Contains(cnt, "count: 0") || !strings.Contains(cnt, "packs: 0") {
		t.Fatalf("objects were copied instead of borrowed:\n%s", cnt)
	}
	testkit.Git(t, "", "clone", "-q", urlA, filepath.Join(t.TempDir(), "a"))

	// A moves on and propagates back: the two repositories now borrow from
	// each other (a cycle git must tolerate).
	y := testkit.GitCommit(t, work, "y")
	stA := state("sA", 20, "ref: refs/heads/main", "refs/heads/main", y)
	ts.auth.addState(ownerA, "proj", stA)
	testkit.Git(t, work, "push", urlA, "main")
	if err := ts.repos.Propagate(ctx, ref(ownerA, "proj"), []git.Target{{Repo: ref(ownerB, "proj"), Borrow: true}}, stA.Refs, stA.HEAD); err != nil {
		t.Fatal(err)
	}
	if got := ts.refs(ownerB, "proj")["refs/heads/main"]; got != y {
		t.Fatalf("B's main = %s, want %s", got, y)
	}

	// Deleting B's copy must not break A's: A takes the objects it borrows.
	if err := ts.repos.Delete(ctx, ref(ownerB, "proj")); err != nil {
		t.Fatal(err)
	}
	if ts.repos.Exists(ref(ownerB, "proj")) {
		t.Fatal("B's repository still exists")
	}
	testkit.Git(t, dirA, "fsck", "--connectivity-only")
	testkit.Git(t, "", "clone", "-q", urlA, filepath.Join(t.TempDir(), "a2"))
}

// F01: a repository that may not borrow gets its own copy of the objects,
// and a repository whose objects are borrowed never prunes them, so a
// rewrite and gc there cannot break the borrower.
func TestAbuse_F01_CopyWhenUntrustedAndNoPruneWhenBorrowed(t *testing.T) {
	for _, borrow := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy", true: "borrow"}[borrow], func(t *testing.T) {
			ts := newTestServer(t, Options{})
			ownerX, urlX := ts.newRepo("proj")
			ownerA, urlA := ts.newRepo("proj")
			work := testkit.GitWork(t)
			k := testkit.GitCommit(t, work, "k")
			st := state("sX", 10, "ref: refs/heads/main", "refs/heads/main", k)
			ts.auth.addState(ownerX, "proj", st)
			testkit.Git(t, work, "push", urlX, "main")
			ctx := context.Background()
			if err := ts.repos.Propagate(ctx, ref(ownerX, "proj"), []git.Target{{Repo: ref(ownerA, "proj"), Borrow: borrow}}, st.Refs, st.HEAD); err != nil {
				t.Fatal(err)
			}
			dirA := filepath.Join(ts.repos.Root(), ownerA, "proj.git")
			_, err := os.Stat(filepath.Join(dirA, "objects", "info", "alternates"))
			if borrow != (err == nil) {
				t.Fatalf("borrow=%v but alternates present=%v", borrow, err == nil)
			}
			// X rewrites history to an unrelated root and collects garbage
			// (what "gc --auto" does in time, forced here).
			testkit.Git(t, work, "checkout", "-q", "--orphan", "other")
			other := testkit.GitCommit(t, work, "unrelated")
			stX2 := state("sX2", 20, "ref: refs/heads/main", "refs/heads/main", other)
			ts.auth.addState(ownerX, "proj", stX2)
			testkit.Git(t, work, "push", "-f", urlX, "other:main")
			dirX := filepath.Join(ts.repos.Root(), ownerX, "proj.git")
			testkit.Git(t, dirX, "reflog", "expire", "--expire=now", "--all")
			for i := 0; i < 2; i++ {
				// Maintain is what the server runs; make gc --auto act by
				// lowering its threshold through the repository config.
				testkit.Git(t, dirX, "config", "gc.auto", "1")
				testkit.Git(t, dirX, "config", "gc.autoPackLimit", "1")
				// Stands for the two weeks of the default pruneExpire
				// having passed (git's clock cannot be faked here).
				testkit.Git(t, dirX, "config", "gc.pruneExpire", "now")
				if err := ts.repos.Maintain(ctx, ref(ownerX, "proj")); err != nil {
					t.Fatal(err)
				}
			}
			testkit.Git(t, dirA, "fsck", "--connectivity-only")
			testkit.Git(t, "", "clone", "-q", urlA, filepath.Join(t.TempDir(), "a"))
			if got := ts.refs(ownerA, "proj")["refs/heads/main"]; got != k {
				t.Fatalf("A's main = %s, want %s", got, k)
			}
		})
	}
}

func TestG01G5_NostrRefs(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work := testkit.GitWork(t)
	x := testkit.Git(t, work, "rev-parse", "HEAD")
	z := testkit.GitCommit(t, work, "z")

	t.Run("G5a_invalid_id", func(t *testing.T) {
		pushRejected(t, ts, owner, "proj", work, "Invalid event ID", url, x+":refs/nostr/123")
	})
	t.Run("G5b_G5g_unknown_id_is_placeholder_without_state", func(t *testing.T) {
		id := randomHex64()
		testkit.Git(t, work, "push", url, z+":refs/nostr/"+id)
		if out := testkit.Git(t, "", "ls-remote", url); !strings.Contains(out, z+"\trefs/nostr/"+id) {
			t.Fatalf("ls-remote lacks the placeholder:\n%s", out)
		}
		p := ts.hooks.all()
		last := p[len(p)-1]
		if len(last.Placeholders) != 1 || last.Placeholders[0] != (Placeholder{EventID: id, Tip: z}) || last.StateEventID != "" {
			t.Fatalf("OnPush = %+v", last)
		}
	})
	t.Run("G5d_known_pr_wrong_tip", func(t *testing.T) {
		id := randomHex64()
		ts.auth.setPR(id, x)
		pushRejected(t, ts, owner, "proj", work, "specifies commit "+x, url, z+":refs/nostr/"+id)
	})
	t.Run("G5e_known_pr_matching_tip", func(t *testing.T) {
		id := randomHex64()
		ts.auth.setPR(id, z)
		testkit.Git(t, work, "push", url, z+":refs/nostr/"+id)
		p := ts.hooks.all()
		if last := p[len(p)-1]; len(last.Placeholders) != 0 {
			t.Fatalf("a known PR's ref was reported as a placeholder: %+v", last)
		}
	})
	t.Run("other_namespaces_refused", func(t *testing.T) {
		pushRejected(t, ts, owner, "proj", work, "only refs/heads", url, z+":refs/meta/x")
	})
}

// Concurrent pushes to one repository are serialised: the second push waits
// for the first to finish, then sees the moved ref and is told to retry.
func TestConcurrentPushesSerialised(t *testing.T) {
	ts := newTestServer(t, Options{})
	owner, url := ts.newRepo("proj")
	work1 := testkit.GitWork(t)
	x := testkit.Git(t, work1, "rev-parse", "HEAD")
	work2 := t.TempDir()
	testkit.Git(t, "", "clone", "-q", work1, work2)
	ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x))
	// Each push is authorised twice: once on its command list (no lock),
	// once by the push gate under the repository lock. The first two calls
	// are both pushes' pre-checks (neither push reaches its gate before its
	// own pre-check returns): they are held until both have arrived, so
	// neither push can finish before the other is checked; the gate's calls
	// are then held until both pushes are at the lock.
	pre, gate := make(chan struct{}), make(chan struct{})
	ts.auth.mu.Lock()
	ts.auth.pre, ts.auth.preCalls, ts.auth.gate = pre, 2, gate
	ts.auth.mu.Unlock()
	dir := filepath.Join(ts.repos.Root(), owner, "proj.git")

	var wg sync.WaitGroup
	results := make([]error, 2)
	outs := make([]string, 2)
	for i, work := range []string{work1, work2} {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i], results[i] = testkit.GitTry(work, "push", url, "main") }()
	}
	testwait.For(t, "both pushes to be asked for authorisation", func() bool {
		ts.auth.mu.Lock()
		defer ts.auth.mu.Unlock()
		return len(ts.auth.asked) == 2
	})
	close(pre)
	// One push holds the lock and is being authorised; the other waits for
	// the lock.
	testwait.For(t, "one push to hold the lock and the other to wait for it", func() bool {
		return ts.repos.LockHolders(dir) == 2
	})
	ts.auth.mu.Lock()
	ts.auth.maxIn = ts.auth.inFlight
	ts.auth.mu.Unlock()
	close(gate)
	wg.Wait()
	ts.auth.mu.Lock()
	maxIn := ts.auth.maxIn
	ts.auth.mu.Unlock()
	if maxIn != 1 {
		t.Fatalf("%d pushes were authorised under the lock at once, want 1", maxIn)
	}
	won, lost := 0, 1
	if results[0] != nil {
		won, lost = 1, 0
	}
	if results[won] != nil {
		t.Fatalf("neither push succeeded:\n%s\n%s", outs[0], outs[1])
	}
	if results[lost] == nil || !strings.Contains(outs[lost], "fetch and retry") {
		t.Fatalf("second push: err=%v\n%s", results[lost], outs[lost])
	}
}

// A push that moves one ref and deletes another is one applied push: git
// runs a transaction of its own on packed-refs for the deletion (it aborts
// when the ref is loose, commits when it is packed) before the push's, and
// the push gate must wait for the push's own before it reports the push
// and gives the lock back (G01-G2 full alignment; the post-push hook
// releases the state).
func TestG01G2d_UpdateWithDeletionReportedOnce(t *testing.T) {
	for _, packed := range []bool{false, true} {
		t.Run(map[bool]string{false: "loose", true: "packed"}[packed], func(t *testing.T) {
			ts := newTestServer(t, Options{})
			owner, url := ts.newRepo("proj")
			work := testkit.GitWork(t)
			x := testkit.Git(t, work, "rev-parse", "HEAD")
			ts.auth.addState(owner, "proj", state("s1", 10, "", "refs/heads/main", x, "refs/heads/dev", x))
			testkit.Git(t, work, "push", url, "main", "main:dev")
			if packed {
				dir, err := ts.repos.Path(ref(owner, "proj"))
				if err != nil {
					t.Fatal(err)
				}
				testkit.Git(t, dir, "pack-refs", "--all")
			}
			y := testkit.GitCommit(t, work, "y")
			ts.auth.addState(owner, "proj", state("s2", 20, "", "refs/heads/main", y))
			testkit.Git(t, work, "push", url, "main", ":dev")
			if refs := ts.refs(owner, "proj"); refs["refs/heads/main"] != y || refs["refs/heads/dev"] != "" {
				t.Fatalf("refs after the push = %v", refs)
			}
			pushes := ts.hooks.all()
			if len(pushes) != 2 || pushes[1].StateEventID != "s2" {
				t.Fatalf("OnPush calls = %+v, want the second push reported with s2", pushes)
			}
		})
	}
}
