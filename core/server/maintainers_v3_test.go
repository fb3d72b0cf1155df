package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// End-to-end checks of the v3 maintainer model (maintainers-v3.md §5) with
// the real git binary: what a client sees in its OKs and its pushes.

const notAuthorized = "invalid: author not authorized for this repository"

func role(letter string, k key, bounds ...string) nostr.Tag {
	return append(nostr.Tag{letter, k.PK}, bounds...)
}

// refused asserts that a push is refused and writes nothing.
func refused(t *testing.T, w *work, url string, refspecs ...string) {
	t.Helper()
	before := lsRemote(t, url)
	out, err := w.push(url, refspecs...)
	if err == nil || !strings.Contains(out, "authorisation failed") {
		t.Fatalf("push %v: err=%v, want refused by authorisation\n%s", refspecs, err, out)
	}
	if after := lsRemote(t, url); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused push changed refs: %v -> %v", before, after)
	}
}

func TestMaintainersV3_Case02_InviteeWithoutAnnouncement_E2E(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	cl.mustAccept(e.announcement(a, "repo", nostr.Tag{"maintainers", b.PK}), purg)
	cl.mustReject(e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), notAuthorized)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")
	// Positive control: the owner's own state authorises the same push.
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("owner's push: %v\n%s", err, out)
	}
}

func TestMaintainersV3_Case07_CanonicalAcceptance_E2E(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	cl.mustAccept(e.announcement(a, "repo", role("M", a), role("m", b)), purg)
	// B's acceptance does not list this server: kept because A invites B.
	acc := e.sign(b, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", b)}, "")
	cl.mustAccept(acc, purg)
	cl.mustAccept(e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push realising B's state: %v\n%s", err, out)
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != x {
		t.Fatalf("A's refs: %v", refs)
	}
}

func TestMaintainersV3_Case09_SelfEndVetoes_E2E(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	cl.mustAccept(e.announcement(a, "repo", role("M", a), role("m", b)), purg)
	cl.mustAccept(e.sign(b, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("m", b, "10", "20")}, ""), purg)
	cl.mustReject(e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), notAuthorized)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")
}

func TestMaintainersV3_Case14_ModeratorMayNotPublishStates_E2E(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, d := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	cl.mustAccept(e.announcement(a, "repo", role("M", a), role("o", d)), purg)
	cl.mustAccept(e.sign(d, 30617, nostr.Tags{{"d", "repo"}, role("M", a), role("o", d)}, ""), purg)
	cl.mustReject(e.state(d, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), notAuthorized)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")
}

// Case 20, the attack: B's existing same-identifier fork has a newer state;
// A invites B (ngit v3 writes the invitee into `maintainers` too). Before
// v3, S_B or B's next fork push replaced A's refs.
func TestMaintainersV3_Case20_InvitedForkCannotTakeOver_E2E(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	wa, wb := newWork(t), newWork(t)
	xa := wa.commit("a's work")
	e.release(a, "repo", wa, xa)
	e.clk.Advance(time.Second)
	yb := wb.commit("b's fork")
	e.release(b, "repo", wb, yb)
	e.clk.Advance(time.Second)
	cl.mustAccept(e.announcement(a, "repo", role("M", a), role("m", b), nostr.Tag{"maintainers", a.PK, b.PK}), "")

	refused(t, wb, e.cloneURL(a, "repo"), "+main:refs/heads/main")
	// B's next ordinary fork push: accepted in B's repo, not propagated.
	e.clk.Advance(time.Second)
	zb := wb.commit("b moves on")
	cl.mustAccept(e.state(b, "repo", map[string]string{"refs/heads/main": zb}, "refs/heads/main"), purg)
	if out, err := wb.push(e.cloneURL(b, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("B's push to its own fork: %v\n%s", err, out)
	}
	if refs := lsRemote(t, e.cloneURL(a, "repo")); refs["refs/heads/main"] != xa {
		t.Fatalf("A's repo followed B's fork: %v, want main=%s", refs, xa)
	}
	// Positive control: once B accepts, B's newer state is authoritative
	// for A's repo and propagates to it.
	e.clk.Advance(time.Second)
	cl.mustAccept(e.announcement(b, "repo", role("M", a), role("m", b)), "")
	e.clk.Advance(time.Second)
	cl.mustAccept(e.state(b, "repo", map[string]string{"refs/heads/main": zb}, "refs/heads/main"), "")
	testwait.For(t, "main of the clone URL to be "+zb, func() bool { return lsRemote(t, e.cloneURL(a, "repo"))["refs/heads/main"] == zb })
}

func TestMaintainersV3_Case22_SameSecondLowerIDWins_E2E(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")
	at := nostr.Timestamp(e.clk.Now().Unix())
	base := nostr.Tags{{"d", "repo"}, {"clone", e.cloneURL(a, "repo")}, {"relays", e.ws}}
	withB := &nostr.Event{Kind: 30617, CreatedAt: at, Tags: append(append(nostr.Tags{}, base...), nostr.Tag{"maintainers", b.PK})}
	if err := withB.Sign(a.SK); err != nil {
		t.Fatal(err)
	}
	var plain *nostr.Event
	for n := 0; plain == nil || plain.ID > withB.ID; n++ {
		plain = &nostr.Event{Kind: 30617, CreatedAt: at, Tags: append(append(nostr.Tags{}, base...), nostr.Tag{"nonce", fmt.Sprint(n)})}
		if err := plain.Sign(a.SK); err != nil {
			t.Fatal(err)
		}
	}
	cl.mustAccept(withB, purg)
	cl.mustAccept(plain, purg) // same second, lower id: replaces
	// B lists A back without hosting here: kept only if A's current
	// announcement invites B, and the lower id (no maintainers) is current.
	accB := e.sign(b, 30617, nostr.Tags{{"d", "repo"}, {"maintainers", a.PK}}, "")
	cl.mustReject(accB, "invalid:")
	cl.mustReject(e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), notAuthorized)
	refused(t, w, e.cloneURL(a, "repo"), "main:refs/heads/main")
	// The higher id sent again changes nothing.
	if ok, msg := cl.publish(withB); ok && !strings.HasPrefix(msg, "duplicate") {
		t.Fatalf("higher-id same-second announcement: %v %q", ok, msg)
	}
	cl.mustReject(e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), notAuthorized)
}
