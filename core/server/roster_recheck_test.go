package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testkit"
)

// The trace an operator sees when a one-way listing no longer authorises.
const inviteeRefused = "grasp_roster_invitee_refused_total"

func (e *testServer) held(id string) bool {
	_, ok := e.srv.Purgatory().Get(id)
	return ok
}

// maintainers-v3.md §3 [R]: a state refused because its author was only
// invited is re-evaluated when an announcement of its identifier changes.
// The invitee's acceptance releases it (stored, served, the owner's repo
// aligned); an unrelated announcement of the identifier, and an
// announcement by the invitee that does not list back, do not.
func TestMaintainersV3_RefusedStateReevaluatedWhenInviteeListsBack(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b, c := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x, role("M", a), role("m", b))
	e.clk.Advance(time.Second)

	sB := e.state(b, "repo", map[string]string{"refs/heads/main": x, "refs/heads/dev": x}, "refs/heads/main")
	cl.mustReject(sB, notAuthorized)
	if got := e.metric(inviteeRefused, "state"); got != 1 {
		t.Fatalf("%s{what=state} = %v after the invitee's state, want 1", inviteeRefused, got)
	}

	// Negative control 1: a stranger's announcement of the identifier
	// (its own repository) re-runs the state, which is refused again.
	cl.mustAccept(e.announcement(c, "repo"), purg)
	e.eventually("re-evaluation after the stranger's announcement", 0, func() bool { return e.metric(inviteeRefused, "state") == 2 })
	if cl.served(sB.ID) {
		t.Fatal("state served after an unrelated announcement")
	}
	// Negative control 2: B's announcement names A but has ended its own
	// role (case 9): kept, because A invites B, and B is still no
	// maintainer.
	e.clk.Advance(time.Second)
	cl.mustAccept(e.sign(b, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", b, "10", "20")}, ""), "")
	e.eventually("re-evaluation after B's declining announcement", 0, func() bool { return e.metric(inviteeRefused, "state") == 3 })
	if cl.served(sB.ID) {
		t.Fatal("state served after an announcement that does not list back")
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/dev"] != "" {
		t.Fatalf("A's repo aligned to a refused state: %v", refs)
	}

	// B lists back: the remembered state is accepted without being resent.
	e.clk.Advance(time.Second)
	cl.mustAccept(e.sign(b, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", b)}, ""), "")
	e.eventually("B's state accepted on re-evaluation", 0, func() bool { return cl.served(sB.ID) })
	e.eventually("A's repo aligned to B's state", 0, func() bool { return lsRemote(t, e.cloneURL(a, "repo"))["refs/heads/dev"] == x })
	if got := e.metric(inviteeRefused, "state"); got != 3 {
		t.Fatalf("%s{what=state} = %v after acceptance, want still 3", inviteeRefused, got)
	}
}

// G01-R2x (maintainers-v3.md §3 [R]), the owner first: the owner's
// announcement lists B; B's announcement that does not list this service
// is accepted without a bare repo, and B's states authorise pushes to the
// owner's repo only once B is confirmed.
func TestG01R2x_InviteeAnnouncementWithoutServiceAfterOwner(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b, s := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x, role("M", a), role("m", b))
	e.clk.Advance(time.Second)

	// Positive control of the listing rule: a stranger not named by A and
	// not listing this service is refused.
	cl.mustReject(e.sign(s, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", s)}, ""), "invalid: announcement must list this service")

	// B answers without listing back yet (its own role ended): accepted,
	// no repository for B, and B's state does not authorise.
	cl.mustAccept(e.sign(b, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", b, "10", "20")}, ""), "")
	if got := infoRefsStatus(t, e.cloneURL(b, "repo")); got != 404 {
		t.Fatalf("info/refs of B's path: %d, want 404", got)
	}
	y := w.commit("y")
	cl.mustReject(e.state(b, "repo", map[string]string{"refs/heads/main": y}, "refs/heads/main"), notAuthorized)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")

	// B confirms: still no repository for B, and B's state authorises.
	e.clk.Advance(time.Second)
	accB := e.sign(b, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", b)}, "")
	cl.mustAccept(accB, "")
	if !cl.served(accB.ID) {
		t.Fatal("B's acceptance not served")
	}
	if got := infoRefsStatus(t, e.cloneURL(b, "repo")); got != 404 {
		t.Fatalf("info/refs of B's path after confirming: %d, want 404", got)
	}
	e.clk.Advance(time.Second)
	sB := e.state(b, "repo", map[string]string{"refs/heads/main": y}, "refs/heads/main")
	cl.mustAccept(sB, purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push realising B's state: %v\n%s", err, out)
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != y {
		t.Fatalf("A's refs: %v", refs)
	}
	e.eventually("B's state released", 0, func() bool { return cl.served(sB.ID) })
	if got := infoRefsStatus(t, e.cloneURL(b, "repo")); got != 404 {
		t.Fatalf("info/refs of B's path after the push: %d, want 404", got)
	}
}

// G01-R2x, the other direction: B's acceptance and B's state arrive
// before the owner's announcement (sync delivers in any order). Both are
// refused with a reason; once A's announcement is here, B's acceptance
// sent again is kept with A's held repository, the remembered state is
// re-evaluated, and a push realising it releases all three together.
func TestG01R2x_InviteeAnnouncementBeforeOwner(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")

	accB := e.sign(b, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", b)}, "")
	cl.mustReject(accB, "invalid: announcement must list this service")
	sB := e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main")
	cl.mustReject(sB, "invalid: no announcement exists for this repository")
	if got := infoRefsStatus(t, e.cloneURL(b, "repo")); got != 404 {
		t.Fatalf("info/refs of B's path: %d, want 404", got)
	}

	e.clk.Advance(time.Second)
	annA := e.announcement(a, "repo", role("M", a), role("m", b))
	cl.mustAccept(annA, purg)
	// The state is re-run on A's announcement and refused: B has not
	// listed back as far as this server knows.
	e.eventually("re-evaluation after A's announcement", 0, func() bool { return e.metric(inviteeRefused, "state") == 1 })
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")

	cl.mustAccept(accB, purg) // held with A's held repository
	if got := infoRefsStatus(t, e.cloneURL(b, "repo")); got != 404 {
		t.Fatalf("info/refs of B's path: %d, want 404", got)
	}
	e.eventually("B's state held on re-evaluation", 0, func() bool { return e.held(sB.ID) })
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push realising B's state: %v\n%s", err, out)
	}
	e.eventually("A's announcement, B's acceptance and B's state released", 0, func() bool {
		return cl.served(annA.ID) && cl.served(accB.ID) && cl.served(sB.ID)
	})
	if got := infoRefsStatus(t, e.cloneURL(b, "repo")); got != 404 {
		t.Fatalf("info/refs of B's path after the push: %d, want 404", got)
	}
}

// G01-R2x (maintainers-v3.md §3 [R], issue 25 part 6): an announcement by a
// subject of an M, m, o or maintainers entry in an accepted same-d
// announcement is accepted although it lists neither this service nor its
// inviter — a plain fork, a self-ended role, a moderator's self-record, a
// legacy invitee — without a bare repository, stored when the inviting
// repository is served and held with it while it is held. Inviters are
// found through the index of who lists whom (fed at acceptance), never by
// reading every announcement of the identifier; a stranger named by nobody
// is still refused.
func TestG01R2x_InviteeNamingNobodyBackIsAccepted(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b, c, d, l, s := newKey(t), newKey(t), newKey(t), newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	e.release(a, "repo", w, x, role("M", a), role("m", b), role("m", c), role("o", d))
	e.release(newKey(t), "legacy", w, x) // another repository, unrelated
	e.clk.Advance(time.Second)

	for name, evt := range map[string]*nostr.Event{
		"a plain fork naming nobody": e.sign(b, 30617, nostr.Tags{{"d", "repo"}, {"clone", "https://elsewhere.example/b/repo.git"}}, ""),
		"a self-ended role":          e.sign(c, 30617, nostr.Tags{{"d", "repo"}, role("m", c, "10", "20")}, ""),
		"a moderator's self-record":  e.sign(d, 30617, nostr.Tags{{"d", "repo"}, role("o", d)}, ""),
	} {
		ok, msg := cl.publish(evt)
		if !ok {
			t.Fatalf("%s: refused with %q, want accepted (its author is named by A's accepted announcement)", name, msg)
		}
		if !cl.served(evt.ID) {
			t.Fatalf("%s: accepted but not served", name)
		}
		if got := infoRefsStatus(t, e.cloneURL(key{testkit.Key{PK: evt.PubKey, Npub: nip34.Npub(evt.PubKey)}}, "repo")); got != 404 {
			t.Fatalf("%s: info/refs of its author's path: %d, want 404 (no bare repository)", name, got)
		}
	}
	// Nobody names S: refused with the listing reason.
	cl.mustReject(e.sign(s, 30617, nostr.Tags{{"d", "repo"}}, ""), "invalid: announcement must list this service")
	// Named for another identifier only: refused.
	cl.mustReject(e.sign(b, 30617, nostr.Tags{{"d", "legacy"}}, ""), "invalid: announcement must list this service")

	// A legacy (role-free) inviter whose repository is still held: L's
	// invitee naming nobody is held with it and released together.
	annL := e.announcement(l, "held", nostr.Tag{"maintainers", b.PK})
	cl.mustAccept(annL, purg)
	forkB := e.sign(b, 30617, nostr.Tags{{"d", "held"}}, "")
	cl.mustAccept(forkB, purg)
	y := w.commit("y")
	cl.mustAccept(e.state(l, "held", map[string]string{"refs/heads/main": y}, "refs/heads/main"), purg)
	if out, err := w.push(e.cloneURL(l, "held"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	e.eventually("L's announcement and B's fork released together", 0, func() bool { return cl.served(annL.ID) && cl.served(forkB.ID) })
}

// The index of who lists whom survives a restart: it is loaded from the
// store at start, so an invitee naming nobody is accepted after one.
func TestG01R2x_InviteeIndexLoadedAtStart(t *testing.T) {
	dir := t.TempDir()
	var port int
	cfgOf := func(c *config.Config) {
		if port == 0 {
			port = testkit.FreePort(t)
		}
		c.Server.DataDir = dir
		c.Server.Listen = fmt.Sprintf("127.0.0.1:%d", port)
		c.Server.PublicURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	first := newEnv(t, cfgOf)
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	first.release(a, "repo", w, w.commit("x"), role("M", a), role("m", b))
	first.stop()
	if err := first.srv.Wait(); err != nil {
		t.Fatal(err)
	}

	second := newEnv(t, cfgOf)
	cl := second.dial()
	fork := second.sign(b, 30617, nostr.Tags{{"d", "repo"}}, "")
	if ok, msg := cl.publish(fork); !ok {
		t.Fatalf("after a restart B's fork naming nobody is refused with %q", msg)
	}
}
