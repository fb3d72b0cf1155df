package server_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

const purg = "purgatory:"

func TestG01R1_RelayAnswersAndAcceptsAnnouncements(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	cl.mustReject(e.sign(a, 1, nil, "hello"), "invalid:")
	cl.mustAccept(e.announcement(a, "repo"), purg)
	if got := cl.query(nostr.Filter{Kinds: []int{1}}); len(got) != 0 {
		t.Fatalf("rejected note served: %v", got)
	}
}

func TestG01R2_AnnouncementMustListService(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	other := "http://example.com/" + a.Npub + "/x.git"
	cases := []struct {
		name string
		tags nostr.Tags
	}{
		{"no clone", nostr.Tags{{"d", "r1"}, {"clone", other}, {"relays", e.ws}}},
		{"no relays", nostr.Tags{{"d", "r2"}, {"clone", e.cloneURL(a, "r2")}, {"relays", "wss://relay.example.com"}}},
		{"neither", nostr.Tags{{"d", "r3"}}},
		{"look-alike host", nostr.Tags{{"d", "r4"}, {"clone", strings.Replace(e.cloneURL(a, "r4"), "127.0.0.1", "127.0.0.1.evil.com", 1)}, {"relays", strings.Replace(e.ws, "127.0.0.1", "127.0.0.1.evil.com", 1)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.tags.GetD()
			cl.mustReject(e.sign(a, 30617, c.tags, ""), "")
			if got := infoRefsStatus(t, e.cloneURL(a, d)); got != 404 {
				t.Fatalf("info/refs for a rejected announcement: %d, want 404", got)
			}
		})
	}
	// a trailing slash on the relay URL still lists this server
	ok := e.sign(a, 30617, nostr.Tags{{"d", "r5"}, {"clone", e.cloneURL(a, "r5")}, {"relays", e.ws + "/"}}, "")
	cl.mustAccept(ok, purg)
}

func TestG01P1_P2_HeldAnnouncementNotServedButRepoExists(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	ann := e.announcement(a, "my repo 🚀")
	cl.mustAccept(ann, "purgatory: won't be served until git data arrives")
	if cl.served(ann.ID) {
		t.Fatal("held announcement served")
	}
	if got := infoRefsStatus(t, e.cloneURL(a, "my repo 🚀")); got != 200 {
		t.Fatalf("info/refs of held repo: %d, want 200", got)
	}
	// G01-P6: resubmission while held
	cl.mustAccept(ann, "duplicate:")
}

// The ngit push order (grasp.md §7.2): state to the GRASP relay first, then
// the git push; live subscribers receive both events on release.
func TestG01P3_StateFirstThenPushReleasesToLiveSubscribers(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	live := e.dial()
	a := newKey(t)
	live.send("REQ", "live", nostr.Filter{Kinds: []int{30617, 30618}, Authors: []string{a.PK}})
	live.next(func(m []jsonMsg) bool { return label(m) == "EOSE" })

	w := newWork(t)
	c1 := w.commit("one")
	ann := e.announcement(a, "repo")
	st := e.state(a, "repo", map[string]string{"refs/heads/main": c1}, "refs/heads/main")
	cl.mustAccept(ann, purg)
	cl.mustAccept(st, purg)
	if cl.served(st.ID) || cl.served(ann.ID) {
		t.Fatal("held events served before the push")
	}
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		m := live.next(func(m []jsonMsg) bool { return label(m) == "EVENT" })
		var evt nostr.Event
		unmarshal(m[2], &evt)
		got[evt.ID] = true
	}
	if !got[ann.ID] || !got[st.ID] {
		t.Fatalf("live subscriber got %v", got)
	}
	if !cl.served(ann.ID) || !cl.served(st.ID) {
		t.Fatal("released events not served to a new REQ")
	}
	refs := lsRemote(t, e.cloneURL(a, "repo"))
	if refs["refs/heads/main"] != c1 {
		t.Fatalf("refs after push: %v", refs)
	}
}

func TestG01G2_PushAuthorisation(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	cl.mustAccept(e.announcement(a, "repo"), purg)

	// G2c: no state at all
	out, err := w.push(url, "main:refs/heads/main")
	if err == nil || !strings.Contains(out, "authoris") {
		t.Fatalf("push without state: err=%v\n%s", err, out)
	}
	// G2b: state names another commit
	z := w.commit("z")
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	out, err = w.push(url, z+":refs/heads/main")
	if err == nil || !strings.Contains(out, "authoris") {
		t.Fatalf("push of the wrong commit: err=%v\n%s", err, out)
	}
	if refs := lsRemote(t, url); len(refs) != 0 {
		t.Fatalf("rejected push wrote refs: %v", refs)
	}
	// G2a: the state's commit
	if out, err := w.push(url, x+":refs/heads/main"); err != nil {
		t.Fatalf("authorised push: %v\n%s", err, out)
	}
	// G2f: a no-op push needs no new state
	if out, err := w.push(url, x+":refs/heads/main"); err != nil {
		t.Fatalf("no-op push: %v\n%s", err, out)
	}
	// G2d: full alignment: a state without `dev` cannot leave dev behind
	e.clk.Advance(time.Second)
	y := w.commit("y")
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x, "refs/heads/dev": y}, "refs/heads/main"), purg)
	if out, err := w.push(url, y+":refs/heads/dev"); err != nil {
		t.Fatalf("push dev: %v\n%s", err, out)
	}
	e.clk.Advance(time.Second)
	x2 := w.commit("x2")
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x2}, "refs/heads/main"), purg)
	if out, err := w.push(url, x2+":refs/heads/main"); err == nil {
		t.Fatalf("push leaving dev behind accepted:\n%s", out)
	}
	if out, err := w.push(url, x2+":refs/heads/main", ":refs/heads/dev"); err != nil {
		t.Fatalf("aligning push with delete: %v\n%s", err, out)
	}
	refs := lsRemote(t, url)
	if refs["refs/heads/main"] != x2 || refs["refs/heads/dev"] != "" {
		t.Fatalf("refs %v", refs)
	}
	// G2g: a stranger's state is refused
	r := newKey(t)
	cl.mustReject(e.state(r, "repo", map[string]string{"refs/heads/main": z}, ""), "invalid: author not authorized")
	// G2h: no announcement
	cl.mustReject(e.state(a, "nothing-here", map[string]string{"refs/heads/main": z}, ""), "invalid: no announcement exists")
}

func TestG01G3_G4_MaintainerStateAndPropagation(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b, c := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	// A lists B; B has an announcement here too, listing A and C.
	cl.mustAccept(e.announcement(a, "repo", nostr.Tag{"maintainers", b.PK}), purg)
	cl.mustAccept(e.announcement(b, "repo", nostr.Tag{"maintainers", a.PK, c.PK}), purg)
	// Changed by maintainers-v3.md §3 ("G01-G3 'B state-only, no
	// announcement → authorised' now rejects"): C, listed but silent, may
	// not publish a state...
	cl.mustReject(e.state(c, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), "invalid: author not authorized for this repository")
	// ...until C lists B back (recursion through confirmed B, §5 case 5).
	// The rejected state is re-evaluated when C's announcement arrives; C
	// republishes a newer one as ngit would.
	cl.mustAccept(e.announcement(c, "repo", nostr.Tag{"maintainers", b.PK}), purg)
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(c, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push authorised by recursive maintainer: %v\n%s", err, out)
	}
	// G01-G4(3): B's repo here has the same refs without a push to it
	if refs := lsRemote(t, e.cloneURL(b, "repo")); refs["refs/heads/main"] != x {
		t.Fatalf("B's repo not propagated: %v", refs)
	}
	// HEAD follows the state (G01-G4(2))
	e.clk.Advance(time.Second)
	dev := w.commit("dev")
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x, "refs/heads/dev": dev}, "refs/heads/dev"), purg)
	if out, err := w.push(e.cloneURL(b, "repo"), dev+":refs/heads/dev"); err != nil {
		t.Fatalf("push dev to B: %v\n%s", err, out)
	}
	clone := t.TempDir()
	mustGit(t, clone, "clone", "-q", e.cloneURL(a, "repo"), "c")
	if br := mustGit(t, clone+"/c", "rev-parse", "--abbrev-ref", "HEAD"); br != "dev" {
		t.Fatalf("clone checked out %q, want dev", br)
	}
}

func TestG01G2i_OtherOwnersStateDoesNotAuthorise(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	cl.mustAccept(e.announcement(a, "repo"), purg)
	cl.mustAccept(e.announcement(b, "repo"), purg)
	cl.mustAccept(e.state(b, "repo", map[string]string{"refs/heads/main": x}, ""), purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err == nil {
		t.Fatalf("B's state authorised a push to A's repo:\n%s", out)
	}
}

func TestG01P8_StateWithExistingDataAlignsAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	y := w.commit("y")
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	cl.mustAccept(e.announcement(a, "repo"), purg)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x, "refs/heads/dev": x}, "refs/heads/main"), purg)
	if out, err := w.push(url, "main:refs/heads/main", "main:refs/heads/dev"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	e.clk.Advance(time.Second)
	st := e.state(a, "repo", map[string]string{"refs/heads/main": y}, "refs/heads/main")
	ok, msg := cl.publish(st)
	if !ok || strings.HasPrefix(msg, purg) {
		t.Fatalf("state with present data: %v %q, want served at once", ok, msg)
	}
	if !cl.served(st.ID) {
		t.Fatal("state not served")
	}
	refs := lsRemote(t, url)
	if refs["refs/heads/main"] != y || refs["refs/heads/dev"] != "" {
		t.Fatalf("refs not aligned to the state: %v", refs)
	}
}

func TestG01P5_ExpiryOnTheServersClock(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Purgatory.TTL = config.Duration(time.Minute)
		c.Purgatory.SweepInterval = config.Duration(time.Second)
	})
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	ann := e.announcement(a, "repo")
	cl.mustAccept(ann, purg)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, ""), purg)
	url := e.cloneURL(a, "repo")
	// let the sweep loop run past the TTL on the fake clock
	for i := 0; i < 70; i++ {
		e.clk.Advance(time.Second)
	}
	testwait.For(t, "info/refs of "+url+" to answer 404", func() bool { return infoRefsStatus(t, url) == 404 })
	if out, err := w.push(url, "main:refs/heads/main"); err == nil {
		t.Fatalf("push after expiry accepted:\n%s", out)
	}
	cl = e.dial() // the old connection's keepalive ran out on the fake clock
	if cl.served(ann.ID) {
		t.Fatal("expired announcement served")
	}
}

func TestG01P7_DeletionByAuthorRemovesHeldAnnouncement(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, m := newKey(t), newKey(t)
	ann := e.announcement(a, "repo")
	cl.mustAccept(ann, purg)
	url := e.cloneURL(a, "repo")
	coord := "30617:" + a.PK + ":repo"
	// someone else's deletion has no effect
	cl.mustAccept(e.sign(m, 5, nostr.Tags{{"a", coord}}, ""), "")
	if infoRefsStatus(t, url) != 200 {
		t.Fatal("a stranger's deletion removed the repo")
	}
	cl.mustAccept(e.sign(a, 5, nostr.Tags{{"a", coord}}, ""), "")
	testwait.For(t, "info/refs of "+url+" to answer 404", func() bool { return infoRefsStatus(t, url) == 404 })
}

func TestG01G5_PRGitFirstThenEvent(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, k := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	e.release(a, "repo", w, x)
	coord := "30617:" + a.PK + ":repo"

	// G5a: not an event id
	if out, err := w.push(url, "main:refs/nostr/123"); err == nil {
		t.Fatalf("push to refs/nostr/123 accepted:\n%s", out)
	}
	// G5b: git first (no auth, no event yet), then the PR binds it
	p := w.commit("proposal")
	pr := e.sign(k, 1618, nostr.Tags{{"a", coord}, {"c", p}, {"clone", url}, {"subject", "s"}}, "")
	if out, err := w.push(url, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("git-first PR push: %v\n%s", err, out)
	}
	if lsRemote(t, url)["refs/nostr/"+pr.ID] != p {
		t.Fatal("placeholder ref missing")
	}
	ok, msg := cl.publish(pr)
	if !ok || strings.HasPrefix(msg, purg) {
		t.Fatalf("PR after its push: %v %q", ok, msg)
	}
	if !cl.served(pr.ID) {
		t.Fatal("PR not served")
	}

	// G5c: git first at the wrong tip: the ref is deleted, the PR held,
	// then the right push releases it
	mustGit(t, w.dir, "checkout", "-q", "-b", "qb", "main")
	q := w.commit("q")
	mustGit(t, w.dir, "checkout", "-q", "-b", "wb", "main")
	wrong := w.commit("wrong")
	pr2 := e.sign(k, 1618, nostr.Tags{{"a", coord}, {"c", q}, {"clone", url}}, "")
	if out, err := w.push(url, wrong+":refs/nostr/"+pr2.ID); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	cl.mustAccept(pr2, purg)
	if _, ok := lsRemote(t, url)["refs/nostr/"+pr2.ID]; ok {
		t.Fatal("ref at the wrong tip kept")
	}
	// G5d: a known PR's ref must match its c
	if out, err := w.push(url, wrong+":refs/nostr/"+pr2.ID); err == nil {
		t.Fatalf("wrong tip accepted for a known PR:\n%s", out)
	}
	// G5e: the right tip releases it
	if out, err := w.push(url, q+":refs/nostr/"+pr2.ID); err != nil {
		t.Fatalf("push of the PR tip: %v\n%s", err, out)
	}
	testwait.For(t, "pr2 to be served", func() bool { return cl.served(pr2.ID) })
}

func TestG01R4_EventsMustReferenceAcceptedRepo(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, u := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	coord := "30617:" + a.PK + ":repo"
	cl.mustAccept(e.announcement(a, "repo"), purg)
	// an issue for a repo still in purgatory is held with it (our choice,
	// friendlier than ngit-grasp's rejection; see core/policy docs)
	early := e.sign(u, 1621, nostr.Tags{{"a", coord}, {"subject", "early"}}, "")
	cl.mustAccept(early, purg)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, ""), purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	testwait.For(t, "early to be served", func() bool { return cl.served(early.ID) })

	issue := e.sign(u, 1621, nostr.Tags{{"a", coord}, {"subject", "bug"}}, "")
	cl.mustAccept(issue, "")
	comment := e.sign(u, 1111, nostr.Tags{{"E", issue.ID}, {"K", "1621"}}, "me too")
	cl.mustAccept(comment, "")
	note := e.sign(u, 1, nostr.Tags{{"q", coord}}, "look")
	cl.mustAccept(note, "")
	status := e.sign(a, 1632, nostr.Tags{{"e", issue.ID, "", "root"}}, "")
	cl.mustAccept(status, "")
	cl.mustReject(e.sign(u, 1621, nostr.Tags{{"subject", "orphan"}}, ""), "invalid:")
	cl.mustReject(e.sign(u, 1621, nostr.Tags{{"a", "30617:" + u.PK + ":elsewhere"}}, ""), "invalid:")
	for _, evt := range []*nostr.Event{issue, comment, note, status} {
		if !cl.served(evt.ID) {
			t.Fatalf("kind %d not served", evt.Kind)
		}
	}
}

func TestG01P6_ReplacementDroppingServiceEvicts(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	url := e.cloneURL(a, "repo")
	cl.mustAccept(e.announcement(a, "repo"), purg)
	e.clk.Advance(time.Second)
	v2 := e.announcement(a, "repo", nostr.Tag{"name", "v2"})
	cl.mustAccept(v2, purg) // replaces the held entry
	e.clk.Advance(time.Second)
	gone := e.sign(a, 30617, nostr.Tags{{"d", "repo"}, {"clone", "https://elsewhere.example/x.git"}, {"relays", "wss://elsewhere.example"}}, "")
	cl.mustReject(gone, "")
	testwait.For(t, "info/refs of "+url+" to answer 404", func() bool { return infoRefsStatus(t, url) == 404 })
	if cl.served(v2.ID) {
		t.Fatal("evicted announcement served")
	}
}

func TestG01G5c_PRWhoseTipIsAlreadyHereIsServedAndBound(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, k := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	cl.mustAccept(e.announcement(a, "repo"), purg)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, ""), purg)
	q := w.commit("q")
	wrong := w.commit("wrong") // descends from q, so q arrives with it
	if out, err := w.push(url, "main~2:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	pr := e.sign(k, 1618, nostr.Tags{{"a", "30617:" + a.PK + ":repo"}, {"c", q}, {"clone", url}}, "")
	if out, err := w.push(url, wrong+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("git-first push: %v\n%s", err, out)
	}
	ok, msg := cl.publish(pr)
	if !ok || strings.HasPrefix(msg, purg) {
		t.Fatalf("PR whose tip is present: %v %q", ok, msg)
	}
	if got := lsRemote(t, url)["refs/nostr/"+pr.ID]; got != q {
		t.Fatalf("refs/nostr/%s = %q, want the PR tip %s", pr.ID, got, q)
	}
}

func TestG01G5f_UnboundPlaceholderRefIsCollected(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Purgatory.NostrRefTTL = config.Duration(20 * time.Minute)
		c.Purgatory.SweepInterval = config.Duration(time.Minute)
	})
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	e.release(a, "repo", w, x)
	p := w.commit("proposal")
	id := strings.Repeat("ab", 32) // no PR event will ever come
	if out, err := w.push(url, p+":refs/nostr/"+id); err != nil {
		t.Fatalf("placeholder push: %v\n%s", err, out)
	}
	e.clk.Advance(10 * time.Minute)
	if lsRemote(t, url)["refs/nostr/"+id] != p {
		t.Fatal("placeholder collected before its TTL")
	}
	e.advanceUntil(time.Minute, func() bool { _, ok := lsRemote(t, url)["refs/nostr/"+id]; return !ok })
	if lsRemote(t, url)["refs/heads/main"] != x {
		t.Fatal("collecting the placeholder touched other refs")
	}
}

// N34-2 / G01-G2e: ngit's states list annotated tags twice, the tag object
// and the peeled commit (`^{}`); the peeled entry is not a ref to align.
func TestG01G2e_AnnotatedTagWithPeeledEntry(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	mustGit(t, w.dir, "tag", "-a", "v1", "-m", "release one")
	tagObj := mustGit(t, w.dir, "rev-parse", "v1")
	url := e.cloneURL(a, "repo")
	cl.mustAccept(e.announcement(a, "repo"), purg)
	st := e.sign(a, 30618, nostr.Tags{{"d", "repo"}, {"refs/heads/main", x}, {"refs/tags/v1", tagObj}, {"refs/tags/v1^{}", x}, {"HEAD", "ref: refs/heads/main"}}, "")
	cl.mustAccept(st, purg)
	if out, err := w.push(url, "main:refs/heads/main", "refs/tags/v1:refs/tags/v1"); err != nil {
		t.Fatalf("push with an annotated tag: %v\n%s", err, out)
	}
	refs := lsRemote(t, url)
	if refs["refs/tags/v1"] != tagObj || refs["refs/tags/v1^{}"] != x {
		t.Fatalf("refs %v", refs)
	}
	testwait.For(t, "st to be served", func() bool { return cl.served(st.ID) })
}

// grasp.md §10 item 6: the latest stored state authorises a push too, so a
// repo that lost its data is healed by pushing it again, with no new state
// event (ngit-grasp only looks in purgatory and refuses).
func TestG01G2_StoredStateAuthorisesAHealingPush(t *testing.T) {
	e := newEnv(t, nil)
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	e.release(a, "repo", w, x)
	ctx := context.Background()
	if err := e.srv.Repos().Delete(ctx, a.repo("repo")); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Repos().Create(ctx, a.repo("repo")); err != nil {
		t.Fatal(err)
	}
	if out, err := w.push(url, "main:refs/heads/main"); err != nil {
		t.Fatalf("healing push refused: %v\n%s", err, out)
	}
	if lsRemote(t, url)["refs/heads/main"] != x {
		t.Fatal("repo not healed")
	}
}

// A maintainer who announces after the push gets a repo already at the
// latest state (objects shared with the owner's copy) and a served
// announcement, with no push of their own (G01-G4 part 3, late joiner).
func TestG01G4_LateMaintainerRepoIsBroughtToTheState(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x, nostr.Tag{"maintainers", b.PK})
	annB := e.announcement(b, "repo", nostr.Tag{"maintainers", a.PK})
	cl.mustAccept(annB, purg)
	testwait.For(t, "annB to be served", func() bool { return cl.served(annB.ID) })
	if refs := lsRemote(t, e.cloneURL(b, "repo")); refs["refs/heads/main"] != x {
		t.Fatalf("late maintainer's repo: %v, want main=%s", refs, x)
	}
}

// An announcement deleted by its author and published again is served at
// once when the repo's data is still here: it does not wait for a push.
func TestG01P1_ReannouncedRepoWithDataIsServedAtOnce(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x)
	e.clk.Advance(time.Second)
	cl.mustAccept(e.sign(a, 5, nostr.Tags{{"a", "30617:" + a.PK + ":repo"}}, ""), "")
	e.clk.Advance(time.Second)
	again := e.announcement(a, "repo", nostr.Tag{"name", "back"})
	cl.mustAccept(again, purg)
	testwait.For(t, "again to be served", func() bool { return cl.served(again.ID) })
	if lsRemote(t, e.cloneURL(a, "repo"))["refs/heads/main"] != x {
		t.Fatal("repo data lost")
	}
}

// G01-G5 "MAY reject based on size": a push over grasp.max_push_mb fails,
// the client is told, and nothing is written.
func TestG01G5_PushOverTheSizeLimitWritesNothing(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.Grasp.MaxPushMB = 1 })
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x)
	big := make([]byte, 3<<20)
	rand.NewChaCha8([32]byte{1}).Read(big) // incompressible
	if err := os.WriteFile(filepath.Join(w.dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, w.dir, "add", "big.bin")
	mustGit(t, w.dir, "commit", "-q", "-m", "big")
	id := strings.Repeat("cd", 32)
	out, err := w.push(e.cloneURL(a, "repo"), "main:refs/nostr/"+id)
	if err == nil {
		t.Fatalf("a 3 MiB push passed a 1 MiB limit:\n%s", out)
	}
	if _, ok := lsRemote(t, e.cloneURL(a, "repo"))["refs/nostr/"+id]; ok {
		t.Fatal("the refused push wrote its ref")
	}
}
