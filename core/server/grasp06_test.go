package server_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/server"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// GRASP-06 /prs/ hosting end to end (grasp.md §3.9): the real git binary
// through the HTTP server, events over the websocket.

func newPRsEnv(t *testing.T, mutate func(c *config.Config)) *testServer {
	t.Helper()
	return newEnv(t, func(c *config.Config) {
		c.Grasp.Grasp06 = true
		if mutate != nil {
			mutate(c)
		}
	})
}

// prsURL is k's GRASP-06 endpoint for identifier d on e.
func (e *testServer) prsURL(k key, d string) string {
	return e.base + nip34.PRsRepo(k.PK, d).URLPath()
}

// prsDir is where k's /prs/ repository d would live on disk.
func (e *testServer) prsDir(k key, d string) string {
	e.t.Helper()
	dir, err := e.srv.Repos().Path(nip34.PRsRepo(k.PK, d))
	if err != nil {
		e.t.Fatal(err)
	}
	return dir
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// prEvent is a PR by k for owner's repository d whose clone names url.
func (e *testServer) prEvent(k key, owner key, d, tip, url string) *nostr.Event {
	return e.sign(k, 1618, nostr.Tags{{"a", "30617:" + owner.PK + ":" + d}, {"c", tip}, {"clone", url}, {"subject", "s"}}, "")
}

func TestG06_0_DisabledIs404AndNotInNIP11(t *testing.T) {
	off := newEnv(t, nil)
	k := newKey(t)
	w := newWork(t)
	p := w.commit("p")
	for _, path := range []string{"/info/refs?service=git-upload-pack", "/info/refs?service=git-receive-pack"} {
		resp, err := http.Get(off.prsURL(k, "repo") + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GRASP-06 off: %s answers %d, want 404", path, resp.StatusCode)
		}
	}
	if out, err := w.push(off.prsURL(k, "repo"), p+":refs/nostr/"+strings.Repeat("a", 64)); err == nil {
		t.Fatalf("GRASP-06 off: a /prs/ push was accepted:\n%s", out)
	}
	if exists(filepath.Join(off.srv.Repos().Root(), "prs")) {
		t.Fatal("GRASP-06 off: a /prs/ directory was created")
	}
	if slices.Contains(off.grasps(), "GRASP-06") {
		t.Fatalf("GRASP-06 off but NIP-11 lists it: %v", off.grasps())
	}
	// the PR relaxation is off too
	off.dial().mustReject(off.prEvent(k, newKey(t), "repo", p, off.prsURL(k, "repo")), "invalid:")

	on := newPRsEnv(t, nil)
	if !slices.Contains(on.grasps(), "GRASP-06") {
		t.Fatalf("GRASP-06 on but NIP-11 does not list it: %v", on.grasps())
	}
}

func TestG06_1_AnyWellFormedPathIsAnEmptyRepositoryWithoutADirectory(t *testing.T) {
	e := newPRsEnv(t, nil)
	k := newKey(t)
	for _, d := range []string{"anything", "my repo 🚀"} {
		url := e.prsURL(k, d)
		if refs := lsRemote(t, url); len(refs) != 0 {
			t.Fatalf("ls-remote %s: %v, want no refs", url, refs)
		}
		if status := infoRefsStatus(t, url); status != http.StatusOK {
			t.Fatalf("info/refs %s: %d", url, status)
		}
		resp, err := http.Get(url + "/info/refs?service=git-receive-pack")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("receive-pack advertisement of %s: %d", url, resp.StatusCode)
		}
	}
	// clone of an empty /prs/ repository works too
	if out, err := gitRun(t, t.TempDir(), "clone", "-q", e.prsURL(k, "anything"), "c"); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	if exists(filepath.Join(e.srv.Repos().Root(), "prs")) {
		t.Fatal("reading /prs/ paths created a directory")
	}
	// a hex pubkey is not a well-formed path
	if status := infoRefsStatus(t, e.base+"/prs/"+k.PK+"/anything.git"); status != http.StatusNotFound {
		t.Fatalf("hex pubkey in a /prs/ path: %d, want 404", status)
	}
}

func TestG06_2_PushThenPublishIsReleasedAndServed(t *testing.T) {
	e := newPRsEnv(t, nil)
	cl := e.dial()
	k, owner := newKey(t), newKey(t) // owner's repository is not hosted here
	w := newWork(t)
	p := w.commit("proposal")
	url := e.prsURL(k, "repo")
	pr := e.prEvent(k, owner, "repo", p, url)
	if out, err := w.push(url, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push to /prs/: %v\n%s", err, out)
	}
	if !exists(e.prsDir(k, "repo")) {
		t.Fatal("the accepted push created no repository")
	}
	ok, msg := cl.publish(pr)
	if !ok || strings.HasPrefix(msg, purg) {
		t.Fatalf("PR after its /prs/ push: OK %v %q, want stored", ok, msg)
	}
	if !cl.served(pr.ID) {
		t.Fatal("PR not served")
	}
	if got := lsRemote(t, url)["refs/nostr/"+pr.ID]; got != p {
		t.Fatalf("refs/nostr/%s = %q, want %s", pr.ID, got, p)
	}
	// still there after the placeholder TTL: the ref is bound
	e.clk.Advance(time.Hour)
	if err := e.srv.Hosting().Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := lsRemote(t, url)["refs/nostr/"+pr.ID]; got != p {
		t.Fatalf("bound /prs/ ref collected: %q", got)
	}
	if e.metric("grasp_prs_pushes_total", "accepted") != 1 || e.metric("grasp_prs_events_total", "released") != 1 || e.metric("grasp_prs_bytes_total", "") <= 0 {
		t.Fatalf("metrics: pushes %v released %v bytes %v", e.metric("grasp_prs_pushes_total", "accepted"),
			e.metric("grasp_prs_events_total", "released"), e.metric("grasp_prs_bytes_total", ""))
	}
}

func TestG06_3_OnlyNostrRefsAndAMixedPushIsRefusedWhole(t *testing.T) {
	e := newPRsEnv(t, nil)
	k := newKey(t)
	w := newWork(t)
	p := w.commit("p")
	url := e.prsURL(k, "repo")
	out, err := w.push(url, "main:refs/heads/main")
	if err == nil || !strings.Contains(out, "only refs/nostr/<event-id> may be pushed to /prs/") {
		t.Fatalf("refs/heads/main to /prs/: err=%v\n%s", err, out)
	}
	id := strings.Repeat("b", 64)
	out, err = w.push(url, p+":refs/nostr/"+id, "main:refs/heads/main")
	if err == nil || !strings.Contains(out, "only refs/nostr/<event-id>") {
		t.Fatalf("mixed push to /prs/: err=%v\n%s", err, out)
	}
	if exists(filepath.Join(e.srv.Repos().Root(), "prs")) {
		t.Fatal("a refused /prs/ push wrote a directory")
	}
	if refs := lsRemote(t, url); len(refs) != 0 {
		t.Fatalf("refused pushes left refs: %v", refs)
	}
	if out, err := w.push(url, p+":refs/nostr/123"); err == nil {
		t.Fatalf("refs/nostr/123 accepted:\n%s", out)
	}
	if e.metric("grasp_prs_refused_total", "namespace") != 2 {
		t.Fatalf("refusals by reason namespace: %v, want 2", e.metric("grasp_prs_refused_total", "namespace"))
	}
}

func TestG06_4_EventFirstIsHeldThenReleasedByThePush(t *testing.T) {
	e := newPRsEnv(t, nil)
	cl := e.dial()
	k, owner := newKey(t), newKey(t)
	w := newWork(t)
	p := w.commit("proposal")
	url := e.prsURL(k, "repo")
	pr := e.prEvent(k, owner, "repo", p, url)
	cl.mustAccept(pr, "purgatory: PR event stored, waiting for git push with commit "+p)
	if cl.served(pr.ID) {
		t.Fatal("PR served before its push")
	}
	if exists(filepath.Join(e.srv.Repos().Root(), "prs")) {
		t.Fatal("a held PR created a /prs/ directory")
	}
	// a PR update for the same path is accepted the same way
	up := e.sign(k, 1619, nostr.Tags{{"a", "30617:" + owner.PK + ":repo"}, {"E", pr.ID}, {"c", p}, {"clone", url}}, "")
	cl.mustAccept(up, purg)
	if out, err := w.push(url, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	testwait.For(t, "pr to be served", func() bool { return cl.served(pr.ID) })
	if got := lsRemote(t, url)["refs/nostr/"+pr.ID]; got != p {
		t.Fatalf("refs/nostr/%s = %q after the release", pr.ID, got)
	}
	if out, err := w.push(url, p+":refs/nostr/"+up.ID); err != nil {
		t.Fatalf("push of the update: %v\n%s", err, out)
	}
	testwait.For(t, "up to be served", func() bool { return cl.served(up.ID) })
}

func TestG06_5_RelaxationOnlyForThisEndpointSignerAndD(t *testing.T) {
	e := newPRsEnv(t, nil)
	cl := e.dial()
	k, other, owner := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	p := w.commit("p")
	for name, clone := range map[string]string{
		"another host":         "http://elsewhere.example" + nip34.PRsRepo(k.PK, "repo").URLPath(),
		"another npub":         e.prsURL(other, "repo"),
		"a d in no 'a' tag":    e.prsURL(k, "nope"),
		"the owner's own path": e.cloneURL(owner, "repo"),
	} {
		ok, msg := cl.publish(e.prEvent(k, owner, "repo", p, clone))
		if ok || !strings.HasPrefix(msg, "invalid:") {
			t.Fatalf("%s: OK %v %q, want false invalid:", name, ok, msg)
		}
	}
}

func TestG06_6_TipMismatchDeletesTheRefAndKeepsTheEventHeld(t *testing.T) {
	e := newPRsEnv(t, nil)
	cl := e.dial()
	k, owner := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	mustGit(t, w.dir, "checkout", "-q", "--orphan", "z")
	z := w.commit("z") // unrelated to x
	url := e.prsURL(k, "repo")

	// git first at Z, then the PR names X: the ref goes, with the repository
	pr := e.prEvent(k, owner, "repo", x, url)
	if out, err := w.push(url, z+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	cl.mustAccept(pr, purg)
	if _, ok := lsRemote(t, url)["refs/nostr/"+pr.ID]; ok {
		t.Fatal("the ref at the wrong tip was kept")
	}
	if exists(e.prsDir(k, "repo")) {
		t.Fatal("the /prs/ repository without refs was kept after the mismatch")
	}
	if cl.served(pr.ID) || !e.held(pr.ID) {
		t.Fatal("the mismatched PR left purgatory")
	}

	// event first, then a push at the wrong tip: refused, nothing written
	e.clk.Advance(time.Second)
	pr2 := e.prEvent(k, owner, "repo", x, url)
	cl.mustAccept(pr2, purg)
	out, err := w.push(url, z+":refs/nostr/"+pr2.ID)
	if err == nil || !strings.Contains(out, "specifies commit "+x) {
		t.Fatalf("wrong tip for a known PR: err=%v\n%s", err, out)
	}
	if exists(e.prsDir(k, "repo")) || cl.served(pr2.ID) {
		t.Fatal("a refused push wrote a repository or released its PR")
	}

	// a known PR pushed to another signer's path, or without a clone tag
	// for this endpoint, is refused
	other := newKey(t)
	if out, err := w.push(e.prsURL(other, "repo"), x+":refs/nostr/"+pr2.ID); err == nil || !strings.Contains(out, "signed by") {
		t.Fatalf("PR pushed under another npub: err=%v\n%s", err, out)
	}
	hosted := newKey(t)
	hw := newWork(t)
	e.release(hosted, "repo", hw, hw.commit("h"))
	noClone := e.sign(k, 1618, nostr.Tags{{"a", "30617:" + hosted.PK + ":repo"}, {"c", x}, {"clone", e.cloneURL(hosted, "repo")}}, "")
	cl.mustAccept(noClone, purg)
	if out, err := w.push(url, x+":refs/nostr/"+noClone.ID); err == nil || !strings.Contains(out, "no 'clone' tag naming") {
		t.Fatalf("PR without a clone tag for this endpoint: err=%v\n%s", err, out)
	}
	if exists(e.prsDir(k, "repo")) {
		t.Fatal("refused pushes wrote a /prs/ repository")
	}
}

func TestG06_7_ReleasedPRIsMirroredIntoTheHostedOwnerRepository(t *testing.T) {
	e := newPRsEnv(t, nil)
	cl := e.dial()
	owner, k := newKey(t), newKey(t)
	ow := newWork(t)
	e.release(owner, "repo", ow, ow.commit("base"))
	w := newWork(t)
	p := w.commit("proposal")
	url := e.prsURL(k, "repo")
	pr := e.prEvent(k, owner, "repo", p, url)
	cl.mustAccept(pr, purg)
	if out, err := w.push(url, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push to /prs/: %v\n%s", err, out)
	}
	testwait.For(t, "pr to be served", func() bool { return cl.served(pr.ID) })
	if got := lsRemote(t, e.cloneURL(owner, "repo"))["refs/nostr/"+pr.ID]; got != p {
		t.Fatalf("owner's repository: refs/nostr/%s = %q, want %s", pr.ID, got, p)
	}
	// the mirror is a copy: the commit is in the owner's repository
	dir, err := e.srv.Repos().Path(owner.repo("repo"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gitRun(t, dir, "cat-file", "-e", p); err != nil {
		t.Fatal("the mirrored commit is not in the owner's repository")
	}
	if exists(filepath.Join(dir, "objects", "info", "alternates")) {
		t.Fatal("the owner's repository borrows from a /prs/ repository")
	}
	// git first to /prs/, then the PR for the hosted repository
	q := w.commit("second")
	pr2 := e.prEvent(k, owner, "repo", q, url)
	if out, err := w.push(url, q+":refs/nostr/"+pr2.ID); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	ok, msg := cl.publish(pr2)
	if !ok || strings.HasPrefix(msg, purg) {
		t.Fatalf("PR after its /prs/ push: OK %v %q", ok, msg)
	}
	if got := lsRemote(t, e.cloneURL(owner, "repo"))["refs/nostr/"+pr2.ID]; got != q {
		t.Fatalf("owner's repository: refs/nostr/%s = %q, want %s", pr2.ID, got, q)
	}
	if e.metric("grasp_prs_events_total", "mirrored") != 2 {
		t.Fatalf("mirrored: %v, want 2", e.metric("grasp_prs_events_total", "mirrored"))
	}
}

func TestG06_8_ZeroRefRepositoriesAreRemoved(t *testing.T) {
	// start-up scan: an empty /prs/ repository a crash left behind
	data := t.TempDir()
	k := newKey(t)
	stale := filepath.Join(data, "git", "prs", k.Npub, "stale.git")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	mustGit(t, filepath.Dir(stale), "init", "-q", "--bare", stale)
	e := newPRsEnv(t, func(c *config.Config) {
		c.Server.DataDir = data
		c.Purgatory.NostrRefTTL = config.Duration(20 * time.Minute)
		c.Purgatory.SweepInterval = config.Duration(time.Minute)
	})
	if exists(stale) {
		t.Fatal("the start-up scan kept a /prs/ repository without refs")
	}

	// end of push: a probe push whose refs all fail in git (fsck refuses a
	// tree with a .git entry) leaves no directory
	w := newWork(t)
	blob := mustGit(t, w.dir, "hash-object", "-w", "--stdin")
	tree, err := gitRunIn(t, w.dir, "100644 blob "+blob+"\t.git\n", "mktree")
	if err != nil {
		t.Fatalf("mktree: %v\n%s", err, tree)
	}
	bad := mustGit(t, w.dir, "commit-tree", tree, "-m", "bad")
	url := e.prsURL(k, "repo")
	if out, err := w.push(url, bad+":refs/nostr/"+strings.Repeat("c", 64)); err == nil {
		t.Fatalf("a tree with a .git entry was accepted:\n%s", out)
	}
	if exists(e.prsDir(k, "repo")) {
		t.Fatal("a push whose refs all failed left a /prs/ repository")
	}

	// expiry: an unbound placeholder's ref goes after nostr_ref_ttl, and its
	// repository with it
	p := w.commit("p")
	if out, err := w.push(url, p+":refs/nostr/"+strings.Repeat("d", 64)); err != nil {
		t.Fatalf("placeholder push: %v\n%s", err, out)
	}
	if !exists(e.prsDir(k, "repo")) {
		t.Fatal("no repository after an accepted push")
	}
	e.advanceUntil(time.Minute, func() bool { return !exists(e.prsDir(k, "repo")) })
	if refs := lsRemote(t, url); len(refs) != 0 {
		t.Fatalf("expired /prs/ repository still answers refs: %v", refs)
	}
	if e.metric("grasp_prs_events_total", "removed") < 2 {
		t.Fatalf("removed: %v", e.metric("grasp_prs_events_total", "removed"))
	}
}

// gitRunIn runs git in dir with stdin.
func gitRunIn(t *testing.T, dir, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Issue 12 part 4: /prs/ takes anyone's data, so the placeholder quotas
// bound it per pubkey (the path's npub) and per client IP, with a readable
// refusal before anything stays on disk, advertised in NIP-11.
func TestG06_Limits_PerPubkeyAndIPRefusedBeforeWriting(t *testing.T) {
	e := newPRsEnv(t, func(c *config.Config) {
		c.Purgatory.MaxPlaceholdersPerPubkey = 2
		c.Purgatory.MaxPlaceholdersPerIP = 3
		c.Purgatory.MaxPlaceholderMBPerPubkey = 1
	})
	k, k2, k3 := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	p := w.commit("p")
	id := func(c string) string { return strings.Repeat(c, 64) }
	root := e.srv.Repos().Root()

	// per pubkey, count: three placeholders under one npub, two allowed
	out, err := w.push(e.prsURL(k, "a"), p+":refs/nostr/"+id("1"), p+":refs/nostr/"+id("2"), p+":refs/nostr/"+id("3"))
	if err == nil || !strings.Contains(out, "rate-limited:") || !strings.Contains(out, "under /prs/"+k.Npub) || !strings.Contains(out, "(limit 2)") {
		t.Fatalf("3 placeholders under one npub where 2 are allowed: err=%v\n%s", err, out)
	}
	if exists(filepath.Join(root, "prs")) {
		t.Fatal("a refused /prs/ push wrote a directory")
	}
	// two pass; a third in another /prs/ repository of the same npub does not
	if out, err := w.push(e.prsURL(k, "a"), p+":refs/nostr/"+id("1"), p+":refs/nostr/"+id("2")); err != nil {
		t.Fatalf("2 placeholders: %v\n%s", err, out)
	}
	out, err = w.push(e.prsURL(k, "b"), p+":refs/nostr/"+id("3"))
	if err == nil || !strings.Contains(out, "rate-limited:") || exists(e.prsDir(k, "b")) {
		t.Fatalf("a third placeholder under the npub in another repository: err=%v\n%s", err, out)
	}

	// per pubkey, bytes: 2 MiB where 1 MiB is allowed, disk unchanged
	before := dirBytes(t, root)
	big := w.commitRandom("big.bin", 2<<20)
	out, err = w.push(e.prsURL(k2, "big"), big+":refs/nostr/"+id("6"))
	if err == nil || !strings.Contains(out, "rate-limited:") || !strings.Contains(out, "may hold 1 MiB") {
		t.Fatalf("2 MiB under one npub where 1 MiB is allowed: err=%v\n%s", err, out)
	}
	if exists(e.prsDir(k2, "big")) {
		t.Fatal("the refused push left its repository")
	}
	if after := dirBytes(t, root); after > before+64<<10 {
		t.Fatalf("a refused 2 MiB push grew the git directory from %d to %d bytes", before, after)
	}
	// per IP: one more from this address under another npub, then no more
	if out, err := w.push(e.prsURL(k2, "a"), p+":refs/nostr/"+id("4")); err != nil {
		t.Fatalf("third placeholder from the address: %v\n%s", err, out)
	}
	out, err = w.push(e.prsURL(k3, "a"), p+":refs/nostr/"+id("5"))
	if err == nil || !strings.Contains(out, "rate-limited:") || !strings.Contains(out, "pushed from your address") {
		t.Fatalf("fourth placeholder from one address where 3 are allowed: err=%v\n%s", err, out)
	}
	if exists(e.prsDir(k3, "a")) {
		t.Fatal("the refused push created its repository")
	}

	if e.metric("grasp_prs_refused_total", "quota") != 4 {
		t.Fatalf("refusals by reason quota: %v, want 4", e.metric("grasp_prs_refused_total", "quota"))
	}

	// advertised
	var doc struct {
		Limitation map[string]any `json:"limitation"`
	}
	e.nip11Into(&doc)
	for k, want := range map[string]float64{"max_placeholders_per_pubkey": 2, "max_placeholders_per_ip": 3, "max_placeholder_bytes_per_pubkey": 1 << 20} {
		if doc.Limitation[k] != want {
			t.Fatalf("NIP-11 limitation.%s = %v, want %v (%v)", k, doc.Limitation[k], want, doc.Limitation)
		}
	}
}

// Issue 12 part 4: the accept plugins see what the author's /prs/ npub and
// the client's address hold, with the limits, so payment, PoW or
// allowlist rules can be written on top.
func TestG06_Limits_PluginSeesTheUsage(t *testing.T) {
	var mu sync.Mutex
	var seen []policy.Usage
	ext := server.Extensions{Accept: policy.AcceptorFunc(func(_ context.Context, evt *nostr.Event, meta policy.Meta) policy.Verdict {
		if evt.Kind != 1618 || meta.Usage == nil {
			return policy.Verdict{}
		}
		mu.Lock()
		seen = append(seen, *meta.Usage)
		mu.Unlock()
		if meta.Usage.Pubkey.Placeholders >= 2 {
			return policy.Verdict{Action: policy.Reject, Msg: "pow: pay first"}
		}
		return policy.Verdict{}
	})}
	e := newEnvWith(t, func(c *config.Config) {
		c.Grasp.Grasp06 = true
		c.Purgatory.MaxPlaceholdersPerPubkey = 7
		c.Purgatory.MaxPlaceholdersPerIP = 9
	}, nil, ext)
	cl := e.dial()
	k, owner := newKey(t), newKey(t)
	w := newWork(t)
	p := w.commit("p")
	url := e.prsURL(k, "repo")
	if out, err := w.push(url, p+":refs/nostr/"+strings.Repeat("e", 64)); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	pr := e.prEvent(k, owner, "repo", p, url)
	ok, msg := cl.publish(pr)
	if !ok {
		t.Fatalf("PR with one placeholder waiting: %q", msg)
	}
	mu.Lock()
	u := seen[len(seen)-1]
	mu.Unlock()
	if u.Pubkey.Placeholders != 1 || u.Pubkey.Bytes <= 0 || u.IP.Placeholders != 1 || u.Limits.PlaceholdersPerPubkey != 7 || u.Limits.PlaceholdersPerIP != 9 {
		t.Fatalf("usage the plugin saw: %+v", u)
	}
	// two waiting: the plugin's rule refuses
	if out, err := w.push(url, p+":refs/nostr/"+strings.Repeat("f", 64), p+":refs/nostr/"+strings.Repeat("9", 64)); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	e.clk.Advance(time.Second)
	cl.mustReject(e.prEvent(k, owner, "repo", p, url), "pow: pay first")
}

// G06-8: /prs/ repositories are not hosted repositories: the landing page,
// the admin status, the integrity check and maintenance never see them.
func TestG06_8_ExcludedFromListingsAndCleanup(t *testing.T) {
	e := newPRsEnv(t, nil)
	k := newKey(t)
	w := newWork(t)
	p := w.commit("p")
	if out, err := w.push(e.prsURL(k, "listed"), p+":refs/nostr/"+strings.Repeat("a", 64)); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	resp, err := http.Get(e.base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), k.Npub) || strings.Contains(string(body), "listed") {
		t.Fatal("the landing page lists a /prs/ repository")
	}
	st, err := admin.Build(t.Context(), e.srv.AdminSources())
	if err != nil {
		t.Fatal(err)
	}
	if st.Repos != 0 {
		t.Fatalf("admin status counts %d repositories, want 0", st.Repos)
	}
	findings, err := e.srv.Hosting().Integrity(t.Context(), true, nip34.RepoRef{})
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("the integrity check looked at /prs/: %+v", findings)
	}
	if err := e.srv.Hosting().Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := lsRemote(t, e.prsURL(k, "listed"))["refs/nostr/"+strings.Repeat("a", 64)]; got != p {
		t.Fatalf("the /prs/ ref after the integrity repair and maintenance: %q", got)
	}
}

// GRASP-06 under a base path (field-2026-09.md §1: /prs/ keeps it): the
// PR's clone tag and the push both name <public_url>/prs/...
func TestG06_4_UnderABasePath(t *testing.T) {
	e := newPRsEnv(t, func(c *config.Config) { c.Server.PublicURL += "/git" })
	cl := e.dial()
	k, owner := newKey(t), newKey(t)
	w := newWork(t)
	p := w.commit("p")
	url := e.prsURL(k, "repo")
	if !strings.Contains(url, "/git/prs/") {
		t.Fatalf("the /prs/ URL %s is not under the base path", url)
	}
	pr := e.prEvent(k, owner, "repo", p, url)
	cl.mustAccept(pr, purg)
	if out, err := w.push(url, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	testwait.For(t, "pr to be served", func() bool { return cl.served(pr.ID) })
	if status := infoRefsStatus(t, strings.Replace(url, "/git/prs/", "/prs/", 1)); status != http.StatusNotFound {
		t.Fatalf("/prs/ at the root answers %d, want 404", status)
	}
}

// G06-7 with the owner's repository still in purgatory: the PR waits with
// it, and when the owner's first push releases both, the /prs/ ref is
// mirrored.
func TestG06_7_MirroredWhenTheHeldOwnerRepositoryIsReleased(t *testing.T) {
	e := newPRsEnv(t, nil)
	cl := e.dial()
	owner, k := newKey(t), newKey(t)
	ow := newWork(t)
	base := ow.commit("base")
	ann := e.announcement(owner, "repo")
	cl.mustAccept(ann, purg)
	cl.mustAccept(e.state(owner, "repo", map[string]string{"refs/heads/main": base}, "refs/heads/main"), purg)
	w := newWork(t)
	p := w.commit("proposal")
	url := e.prsURL(k, "repo")
	pr := e.prEvent(k, owner, "repo", p, url)
	cl.mustAccept(pr, purg)
	if out, err := w.push(url, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push to /prs/: %v\n%s", err, out)
	}
	if cl.served(pr.ID) {
		t.Fatal("PR served before the repository it names")
	}
	if out, err := ow.push(e.cloneURL(owner, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("owner's push: %v\n%s", err, out)
	}
	testwait.For(t, "ann and pr to be served", func() bool { return cl.served(ann.ID) && cl.served(pr.ID) })
	if got := lsRemote(t, e.cloneURL(owner, "repo"))["refs/nostr/"+pr.ID]; got != p {
		t.Fatalf("owner's repository: refs/nostr/%s = %q, want %s", pr.ID, got, p)
	}
}
