package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// N34-12 (NIP-34 #2395) and N34-13 (#2435): the `u` tag of a subordinate
// fork and the `b` target branch of a PR are stored and queryable by tag
// filter, and never change who may push.
func TestN34_12_13_UAndBTagsQueryableNotAuthority(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, f, k := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x)
	upstream := "30617:" + a.PK + ":repo"
	fork := e.release(f, "repo", w, x, nostr.Tag{"u", upstream, e.ws, a.PK})
	if got := cl.query(nostr.Filter{Tags: nostr.TagMap{"u": {upstream}}}); len(got) != 1 || got[0].ID != fork.ID {
		t.Fatalf("#u query: %d events, want the fork's announcement", len(got))
	}
	// Positive control: a filter on another value finds nothing.
	if got := cl.query(nostr.Filter{Tags: nostr.TagMap{"u": {"30617:" + k.PK + ":repo"}}}); len(got) != 0 {
		t.Fatalf("#u query for another upstream: %d events", len(got))
	}
	// The fork names a as its upstream: that makes f no maintainer of a's
	// repo (a state by f is not authoritative there).
	y := w.commit("y")
	// A second later: in the same second as f's released state, the new
	// state would lose to it half the time (the lower id wins a tie).
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(f, "repo", map[string]string{"refs/heads/main": y}, "refs/heads/main"), purg)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")

	// `u` is no invitation: an announcement that does not list this
	// service and names a only in `u` is refused (maintainer discovery
	// never reads it).
	cl.mustReject(e.sign(k, 30617, nostr.Tags{{"d", "repo"}, {"u", upstream, e.ws, a.PK}}, ""), "invalid: announcement must list this service")

	pr := e.sign(k, 1618, nostr.Tags{{"a", upstream}, {"c", x}, {"b", "dev"}, {"clone", e.cloneURL(a, "repo")}}, "")
	cl.mustAccept(pr, "")
	if got := cl.query(nostr.Filter{Kinds: []int{1618}, Tags: nostr.TagMap{"b": {"dev"}}}); len(got) != 1 || got[0].ID != pr.ID {
		t.Fatalf("#b query: %d events, want the PR", len(got))
	}
	if got := cl.query(nostr.Filter{Kinds: []int{1618}, Tags: nostr.TagMap{"b": {"main"}}}); len(got) != 0 {
		t.Fatalf("#b query for another branch: %d events", len(got))
	}
}

// N34-2 (NIP-34 #2325/#2326): a 30618 with no refs is a valid empty state.
// Stored, served, the repository aligned with it (every ref deleted, the
// objects kept), and authoritative: a push re-creating a ref is refused
// until a later state names it.
func TestN34_2_EmptyStateEmptiesTheRepository(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	url := e.cloneURL(a, "repo")
	e.release(a, "repo", w, x)
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x, "refs/heads/dev": x}, "refs/heads/main"), "")
	e.eventually("aligned to main and dev", 0, func() bool { return lsRemote(t, url)["refs/heads/dev"] == x })

	e.clk.Advance(time.Second)
	empty := e.sign(a, 30618, nostr.Tags{{"d", "repo"}}, "")
	cl.mustAccept(empty, "")
	if !cl.served(empty.ID) {
		t.Fatal("empty state not served")
	}
	e.eventually("every ref deleted", 0, func() bool {
		for ref := range lsRemote(t, url) {
			if strings.HasPrefix(ref, "refs/") {
				return false
			}
		}
		return true
	})
	refused(t, w, url, "main:refs/heads/main")
	// Positive control: a later state naming main authorises the push
	// (or is realised at once: the objects were kept).
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), "")
	if out, err := w.push(url, "main:refs/heads/main"); err != nil && !strings.Contains(out, "up-to-date") {
		t.Fatalf("push after the state naming main: %v\n%s", err, out)
	}
	e.eventually("main back", 0, func() bool { return lsRemote(t, url)["refs/heads/main"] == x })
}

// N34-2: a confirmed co-maintainer's empty state empties every repository
// that follows it (G01-G4 propagation of an empty state).
func TestN34_2_EmptyStateOfACoMaintainerEmptiesBothRepositories(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x, nostr.Tag{"maintainers", b.PK})
	annB := e.announcement(b, "repo", nostr.Tag{"maintainers", a.PK})
	cl.mustAccept(annB, purg)
	e.eventually("B's repository brought to A's state", 0, func() bool { return lsRemote(t, e.cloneURL(b, "repo"))["refs/heads/main"] == x })
	e.clk.Advance(time.Second)
	cl.mustAccept(e.sign(b, 30618, nostr.Tags{{"d", "repo"}}, ""), "")
	for _, k := range []key{a, b} {
		url := e.cloneURL(k, "repo")
		e.eventually("repository emptied", 0, func() bool { return lsRemote(t, url)["refs/heads/main"] == "" })
	}
}

// N34-9: kind 10317 user grasp lists are accepted from anyone (no
// repository needed), served by REQ, replaced by the later version (the
// lower id on a tie); a list with no ws/wss `g` entry is refused.
func TestN34_9_GraspListsFromAnyone(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	k := newKey(t)
	v1 := e.sign(k, 10317, nostr.Tags{{"g", "wss://grasp.example"}}, "")
	cl.mustAccept(v1, "")
	if !cl.served(v1.ID) {
		t.Fatal("10317 not served")
	}
	e.clk.Advance(time.Second)
	v2 := e.sign(k, 10317, nostr.Tags{{"g", "wss://other.example"}, {"g", e.ws}}, "")
	cl.mustAccept(v2, "")
	got := cl.query(nostr.Filter{Kinds: []int{10317}, Authors: []string{k.PK}})
	if len(got) != 1 || got[0].ID != v2.ID {
		t.Fatalf("10317 after replacement: %d events, want the later one", len(got))
	}
	at := nostr.Timestamp(e.clk.Now().Unix())
	lo := e.grind(k, 10317, nostr.Tags{{"g", "wss://tie.example"}}, at, below(v2.ID))
	cl.mustAccept(lo, "")
	if got := cl.query(nostr.Filter{Kinds: []int{10317}, Authors: []string{k.PK}}); len(got) != 1 || got[0].ID != lo.ID {
		t.Fatalf("10317 same-second tie: %d events, want the lower id", len(got))
	}
	// Positive control of the content check.
	cl.mustReject(e.sign(newKey(t), 10317, nostr.Tags{{"g", "https://not-a-relay.example"}}, ""), "invalid:")
}

// N34-8 with NIP-34 #1998: a status (1630-1633) is accepted through its
// `e` root or through the patches it cites with `q`; a status whose
// references are all unknown is refused.
func TestN34_8_StatusesCitingPatchesWithQ(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, c := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x)
	coord := "30617:" + a.PK + ":repo"
	root := e.sign(c, 1617, nostr.Tags{{"a", coord}, {"t", "root"}}, "From x\n")
	cl.mustAccept(root, "")
	rev := e.sign(c, 1617, nostr.Tags{{"a", coord}, {"e", root.ID, "", "reply"}}, "From y\n")
	cl.mustAccept(rev, "")
	unknown := strings.Repeat("9", 64)

	// 1631 applied: e root plus q of the applied patch revision.
	applied := e.sign(a, 1631, nostr.Tags{{"e", root.ID, "", "root"}, {"q", rev.ID, e.ws, c.PK}, {"applied-as-commits", x}}, "")
	cl.mustAccept(applied, "")
	// 1631 whose root is not here but which cites an accepted patch by q.
	viaQ := e.sign(a, 1631, nostr.Tags{{"e", unknown, "", "root"}, {"q", rev.ID}}, "")
	cl.mustAccept(viaQ, "")
	for _, s := range []*nostr.Event{applied, viaQ} {
		if !cl.served(s.ID) {
			t.Fatalf("status %s not served", s.ID[:8])
		}
	}
	if got := cl.query(nostr.Filter{Kinds: []int{1631}, Tags: nostr.TagMap{"q": {rev.ID}}}); len(got) != 2 {
		t.Fatalf("#q query: %d statuses, want 2", len(got))
	}
	// Negative control: root and q both unknown.
	cl.mustReject(e.sign(a, 1632, nostr.Tags{{"e", unknown, "", "root"}, {"q", strings.Repeat("8", 64)}}, ""), "invalid:")
	// A status needs an e tag even when its q is accepted.
	cl.mustReject(e.sign(a, 1630, nostr.Tags{{"q", rev.ID}}, ""), "invalid:")
}

// N34-2: a new repository whose first state is empty (created, nothing
// pushed yet) is complete: the held announcement is released with the
// empty state, instead of waiting for a push and expiring.
func TestN34_2_EmptyFirstStateReleasesTheAnnouncement(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	ann := e.announcement(a, "repo")
	cl.mustAccept(ann, purg)
	empty := e.sign(a, 30618, nostr.Tags{{"d", "repo"}, {"HEAD", "ref: refs/heads/main"}}, "")
	cl.mustAccept(empty, "")
	e.eventually("announcement released with the empty state", 0, func() bool { return cl.served(ann.ID) && cl.served(empty.ID) })
	if got := infoRefsStatus(t, e.cloneURL(a, "repo")); got != 200 {
		t.Fatalf("info/refs: %d", got)
	}
	// Control: a first state naming a commit that is not here keeps the
	// announcement held.
	w := newWork(t)
	x := w.commit("x")
	annB := e.announcement(b, "repo")
	cl.mustAccept(annB, purg)
	cl.mustAccept(e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	if cl.served(annB.ID) || !e.held(annB.ID) {
		t.Fatal("announcement released although its state's data is missing")
	}
}
