package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
)

// openReadings opens, on cl, a live subscription "live" naming the
// repository coord and a negentropy session "neg" over its kinds, and
// waits until the session holds its first answer (the private ids are in
// its set).
func openReadings(t *testing.T, cl *client, coord string) {
	t.Helper()
	cl.send("REQ", "live", nostr.Filter{Tags: nostr.TagMap{"a": {coord}}})
	cl.next(func(m []jsonMsg) bool { return label(m) == "EOSE" && str(m[1]) == "live" })
	if l, msg := cl.negOpenKeep("neg", nostr.Filter{Kinds: privateKinds}); l != "NEG-MSG" {
		t.Fatalf("NEG-OPEN: %s %s", l, msg)
	}
}

// negOpenKeep opens a NIP-77 session id from an empty set and returns the
// server's first answer, leaving the session open.
func (cl *client) negOpenKeep(id string, f nostr.Filter) (string, string) {
	cl.t.Helper()
	vec := newEmptyNeg()
	cl.send("NEG-OPEN", id, f, vec)
	m := cl.next(func(m []jsonMsg) bool {
		return (label(m) == "NEG-MSG" || label(m) == "NEG-ERR") && str(m[1]) == id
	})
	return label(m), str(m[2])
}

// ended waits for the CLOSED of subscription sub and the NEG-ERR of
// session neg on cl, and returns their reasons.
func ended(t *testing.T, cl *client, sub, neg string) (closed, negErr string) {
	t.Helper()
	for closed == "" || negErr == "" {
		m := cl.next(func(m []jsonMsg) bool {
			return (label(m) == "CLOSED" && str(m[1]) == sub) || (label(m) == "NEG-ERR" && str(m[1]) == neg)
		})
		if label(m) == "CLOSED" {
			closed = str(m[2])
		} else {
			negErr = str(m[2])
		}
	}
	return closed, negErr
}

// Issue 23 part 3: revocation is live. A maintainer dropped by the
// owner's new announcement, and a member removed from
// grasp.private_members by a reload, each with a live subscription on the
// repository and an open negentropy session holding its events, see both
// end at once with "restricted:" (the test waits for the messages, no
// clock), are not delivered a new event of the repository on a new
// subscription, and their NIP-98 tokens stop opening git. The owner's own
// subscription goes on and receives the new event (positive control).
func TestPrivate_RevocationEndsSubscriptionsAndSessionsAtOnce(t *testing.T) {
	staff := newKey(t)
	e := newEnv(t, func(c *config.Config) {
		offerPrivate(c)
		c.Grasp.PrivateMembers = []string{staff.Npub}
	})
	owner, maint := newKey(t), newKey(t)
	w := newWork(t)
	tip := w.commit("secret")
	oc := e.dial()
	ann := e.announcement(owner, "vault", nostr.Tag{"private", "true"}, nostr.Tag{"maintainers", maint.PK})
	oc.send("EVENT", ann)
	e.signIn(oc, owner)
	oc.mustAccept(ann, purg)
	oc.mustAccept(e.state(owner, "vault", map[string]string{"refs/heads/main": tip}, "refs/heads/main"), purg)
	clone := e.cloneURL(owner, "vault")
	if out, err := e.gitAs(owner, clone, w.dir, "push", "--porcelain", clone, "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	e.eventually("released", 0, func() bool { return oc.served(ann.ID) })
	coord := nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"}.String()
	mc := e.signedIn(maint)
	mc.mustAccept(e.announcement(maint, "vault", nostr.Tag{"maintainers", owner.PK}), "")
	issue := e.sign(owner, 1621, nostr.Tags{{"a", coord}, {"subject", "secret"}}, "")
	oc.mustAccept(issue, "")

	sc := e.signedIn(staff)
	for _, cl := range []*client{mc, sc, oc} {
		openReadings(t, cl, coord)
	}
	for name, k := range map[string]key{"maintainer": maint, "member": staff} {
		if code, _, _ := httpGet(t, clone+"/info/refs?service=git-upload-pack", "Authorization", e.token(k, clone, "GET")); code != http.StatusOK {
			t.Fatalf("%s's token before the revocation: %d", name, code)
		}
	}

	// the owner drops the maintainer
	e.clk.Advance(2 * time.Second)
	oc.mustAccept(e.announcement(owner, "vault", nostr.Tag{"private", "true"}), "")
	closed, negErr := ended(t, mc, "live", "neg")
	if !strings.HasPrefix(closed, "restricted:") || !strings.HasPrefix(negErr, "restricted:") {
		t.Fatalf("dropped maintainer: CLOSED %q, NEG-ERR %q, want restricted:", closed, negErr)
	}
	// the operator removes the member (SIGHUP reloads grasp.toml; here the
	// server's Reload, which cmd/grasp calls on it)
	next := e.cfg
	next.Grasp.PrivateMembers = nil
	e.srv.Reload(next)
	closed, negErr = ended(t, sc, "live", "neg")
	if !strings.HasPrefix(closed, "restricted:") || !strings.HasPrefix(negErr, "restricted:") {
		t.Fatalf("removed member: CLOSED %q, NEG-ERR %q, want restricted:", closed, negErr)
	}

	// a new event of the repository reaches the owner, not them
	for _, cl := range []*client{mc, sc} {
		cl.send("REQ", "again", nostr.Filter{Kinds: []int{1621, nip34.KindGraspList}, Limit: 0, LimitZero: true})
		cl.next(func(m []jsonMsg) bool { return label(m) == "EOSE" && str(m[1]) == "again" })
	}
	issue2 := e.sign(owner, 1621, nostr.Tags{{"a", coord}, {"subject", "after"}}, "")
	// from another connection: oc's own would read its live EVENT before the OK
	e.signedIn(owner).mustAccept(issue2, "")
	marker := e.sign(newKey(t), nip34.KindGraspList, nostr.Tags{{"g", e.ws}}, "")
	e.dial().mustAccept(marker, "")
	for name, cl := range map[string]*client{"dropped maintainer": mc, "removed member": sc} {
		m := cl.next(func(m []jsonMsg) bool { return label(m) == "EVENT" && str(m[1]) == "again" })
		var got nostr.Event
		unmarshal(m[2], &got)
		if got.ID != marker.ID {
			t.Errorf("%s was delivered %s, want only the public marker", name, got.ID)
		}
	}
	m := oc.next(func(m []jsonMsg) bool { return label(m) == "EVENT" && str(m[1]) == "live" })
	var got nostr.Event
	unmarshal(m[2], &got)
	if got.ID != issue2.ID {
		t.Errorf("the owner's live subscription got %s, want the new issue", got.ID)
	}
	for name, k := range map[string]key{"maintainer": maint, "member": staff} {
		if code, _, _ := httpGet(t, clone+"/info/refs?service=git-upload-pack", "Authorization", e.token(k, clone, "GET")); code != http.StatusForbidden {
			t.Errorf("%s's token after the revocation: %d, want 403", name, code)
		}
	}
	if code, _, _ := httpGet(t, clone+"/info/refs?service=git-upload-pack", "Authorization", e.token(owner, clone, "GET")); code != http.StatusOK {
		t.Errorf("the owner's token: %d", code)
	}
}

// Issue 23 part 6: on several instances sharing one PostgreSQL, the record
// and revocation hold across them. A maintainer reading through instance B
// (a live subscription and a negentropy session on the repository, git
// with its token) is dropped by the owner's announcement published
// through instance A: its subscription and session on B end with
// "restricted:", and B's git refuses its token, while the owner reads on.
func TestPrivate_MultiInstanceRevocationReachesTheOtherInstance(t *testing.T) {
	in := newInstances(t, 2, offerPrivate)
	a, b := in[0], in[1]
	owner, maint := newKey(t), newKey(t)
	w := newWork(t)
	tip := w.commit("secret")
	ann := a.announcement(owner, "vault", nostr.Tag{"private", "true"}, nostr.Tag{"maintainers", maint.PK})
	oc := a.publishPrivate(owner, ann)
	oc.mustAccept(a.state(owner, "vault", map[string]string{"refs/heads/main": tip}, "refs/heads/main"), purg)
	clone := a.cloneURL(owner, "vault")
	if out, err := a.gitAs(owner, clone, w.dir, "push", "--porcelain", clone, "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	a.eventually("released", 0, func() bool { return oc.served(ann.ID) })
	coord := nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"}.String()
	b.signedIn(maint).mustAccept(a.announcement(maint, "vault", nostr.Tag{"maintainers", owner.PK}), "")
	issue := a.sign(owner, 1621, nostr.Tags{{"a", coord}, {"subject", "secret"}}, "")
	oc.mustAccept(issue, "")
	mc := b.signedIn(maint)
	b.eventually("B serves the issue to the maintainer", 0, func() bool { return mc.served(issue.ID) })
	openReadings(t, mc, coord)
	bClone := b.cloneURL(owner, "vault")
	if code, _, _ := httpGet(t, bClone+"/info/refs?service=git-upload-pack", "Authorization", b.token(maint, clone, "GET")); code != http.StatusOK {
		t.Fatalf("the maintainer's token on B before the drop: %d", code)
	}

	a.clk.Advance(2 * time.Second)
	oc.mustAccept(a.announcement(owner, "vault", nostr.Tag{"private", "true"}), "")
	closed, negErr := ended(t, mc, "live", "neg")
	if !strings.HasPrefix(closed, "restricted:") || !strings.HasPrefix(negErr, "restricted:") {
		t.Fatalf("on B: CLOSED %q, NEG-ERR %q, want restricted:", closed, negErr)
	}
	if code, _, _ := httpGet(t, bClone+"/info/refs?service=git-upload-pack", "Authorization", b.token(maint, clone, "GET")); code != http.StatusForbidden {
		t.Fatalf("the dropped maintainer's token on B: %d, want 403", code)
	}
	if code, _, _ := httpGet(t, bClone+"/info/refs?service=git-upload-pack", "Authorization", b.token(owner, clone, "GET")); code != http.StatusOK {
		t.Fatalf("the owner's token on B: %d", code)
	}
	if got := b.signedIn(maint).query(nostr.Filter{IDs: []string{issue.ID}}); len(got) != 0 {
		t.Fatal("B still serves the issue to the dropped maintainer")
	}
}
