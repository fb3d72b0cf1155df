package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
)

// Issue 25 part 3, the rest: a ban withholds what is already stored (REQ,
// COUNT, NEG-OPEN, pages) until it is lifted; a banned key's held
// announcement takes its empty bare repository with it; GRASP-08 members
// are added and removed live over NIP-86, a removed member's open
// subscription carrying private data ending at once.

// TestNIP86_BanWithholdsStoredEvents: an issue banned by id and every event
// of a banned key leave every read surface for clients; the operator's
// unban brings them back.
func TestNIP86_BanWithholdsStoredEvents(t *testing.T) {
	op := newKey(t)
	g := newGWRepoWith(t, func(c *config.Config) { c.Relay.Pubkey = op.PK })
	e := g.e
	spam := e.sign(g.s, 1621, nostr.Tags{{"a", g.coord}, {"subject", "spam by S"}}, "spam")
	g.cl.mustAccept(spam, "")
	visible := func(evt *nostr.Event) bool {
		cl := e.dial()
		n := cl.count(nostr.Filter{Kinds: []int{1621}, Authors: []string{evt.PubKey}})
		_, neg := cl.negOpen(nostr.Filter{Kinds: []int{1621}})
		served := cl.served(evt.ID)
		if served != (n == 1) || served != strings.Contains(neg, evt.ID) {
			t.Errorf("%s: REQ %v, COUNT %d, NEG %v disagree", evt.ID[:8], served, n, strings.Contains(neg, evt.ID))
		}
		return served
	}
	if !visible(g.issue) || !visible(spam) {
		t.Fatal("control: the issues are not served")
	}
	e.op86(op, "banevent", g.issue.ID, "off topic")
	e.op86(op, "banpubkey", g.s.PK, "spammer")
	if visible(g.issue) || visible(spam) {
		t.Fatal("banned event or banned key's event still served")
	}
	if got := e.dial().query(nostr.Filter{Kinds: []int{1621}, Tags: nostr.TagMap{"a": {g.coord}}}); len(got) != 0 {
		t.Errorf("REQ by repository serves %d banned issues", len(got))
	}
	_, _, list := httpGet(t, e.base+"/"+g.a.Npub+"/repo.git/issues")
	if strings.Contains(list, "spam by S") || strings.Contains(list, "it breaks") {
		t.Error("the issues page lists a banned issue")
	}
	e.op86(op, "unbanevent", g.issue.ID)
	e.op86(op, "unbanpubkey", g.s.PK)
	if !visible(g.issue) || !visible(spam) {
		t.Fatal("unbanned events not served again")
	}
}

// TestNIP86_BannedKeysHeldAnnouncementLeavesWithItsRepository: the bare
// repository created when B's announcement was held is removed with it.
func TestNIP86_BannedKeysHeldAnnouncementLeavesWithItsRepository(t *testing.T) {
	op := newKey(t)
	e := newEnv(t, func(c *config.Config) { c.Relay.Pubkey = op.PK })
	b := newKey(t)
	held := e.announcement(b, "held")
	e.dial().mustAccept(held, purg)
	if !e.srv.Repos().Exists(b.repo("held")) {
		t.Fatal("control: the held announcement's bare repository was not created")
	}
	e.op86(op, "banpubkey", b.PK, "spam")
	e.eventually("the banned key's held announcement and its repository go", 0, func() bool {
		return !e.held(held.ID) && !e.srv.Repos().Exists(b.repo("held"))
	})
}

// TestNIP86_MembersAddedAndRemovedLive: addmember lets a key read a private
// repository at once; listmembers names it; removemember ends its open
// subscription that carried private data with restricted: and it reads
// nothing more.
func TestNIP86_MembersAddedAndRemovedLive(t *testing.T) {
	op := newKey(t)
	e := newEnv(t, func(c *config.Config) { offerPrivate(c); c.Relay.Pubkey = op.PK })
	owner, m := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	cl := e.signedIn(m)
	if got := cl.query(nostr.Filter{IDs: p.privateIDs}); len(got) != 0 {
		t.Fatalf("control: a stranger reads %d private events", len(got))
	}
	e.op86(op, "addmember", m.PK, "contractor")
	if got := cl.query(nostr.Filter{IDs: p.privateIDs}); len(got) != len(p.privateIDs) {
		t.Fatalf("an added member reads %d of %d private events", len(got), len(p.privateIDs))
	}
	var members []map[string]string
	json.Unmarshal(e.op86(op, "listmembers"), &members)
	if !slices.ContainsFunc(members, func(x map[string]string) bool { return x["pubkey"] == m.PK }) {
		t.Fatalf("listmembers = %v", members)
	}
	var methods []string
	json.Unmarshal(e.op86(op, "supportedmethods"), &methods)
	for _, want := range []string{"addmember", "removemember", "listmembers"} {
		if !slices.Contains(methods, want) {
			t.Errorf("supportedmethods lacks %s", want)
		}
	}
	cl.send("REQ", "private", nostr.Filter{IDs: p.privateIDs})
	cl.next(func(m []json.RawMessage) bool { return label(m) == "EOSE" && str(m[1]) == "private" })
	e.op86(op, "removemember", m.PK)
	if why := cl.closedWith("private"); !strings.HasPrefix(why, "restricted:") {
		t.Fatalf("the removed member's subscription closed with %q", why)
	}
	if got := e.signedIn(m).query(nostr.Filter{IDs: p.privateIDs}); len(got) != 0 {
		t.Fatalf("a removed member still reads %d private events", len(got))
	}
}

// TestNIP86_JoinWithInviteCode: the operator creates an invite code
// (createclaim, nips#2408); a user's NIP-43 join request (kind 28934, "-",
// claim) with it makes the user a member who reads the private repository;
// an unknown code is refused with restricted:, an unauthenticated request
// with auth-required: (NIP-70); deleteclaim ends the code.
func TestNIP86_JoinWithInviteCode(t *testing.T) {
	op := newKey(t)
	e := newEnv(t, func(c *config.Config) { offerPrivate(c); c.Relay.Pubkey = op.PK })
	owner, u := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	e.op86(op, "createclaim", "welcome-2026")
	var claims []string
	json.Unmarshal(e.op86(op, "listclaims"), &claims)
	if !slices.Contains(claims, "welcome-2026") {
		t.Fatalf("listclaims = %v", claims)
	}
	join := func(code string) *nostr.Event {
		return e.sign(u, 28934, nostr.Tags{{"-"}, {"claim", code}}, "")
	}
	e.dial().mustReject(join("welcome-2026"), "auth-required:")
	cl := e.signedIn(u)
	cl.mustReject(join("not-a-code"), "restricted:")
	if got := cl.query(nostr.Filter{IDs: p.privateIDs}); len(got) != 0 {
		t.Fatalf("control: a stranger reads %d private events", len(got))
	}
	cl.mustAccept(join("welcome-2026"), "info:")
	if got := cl.query(nostr.Filter{IDs: p.privateIDs}); len(got) != len(p.privateIDs) {
		t.Fatalf("a member joined by invite reads %d of %d private events", len(got), len(p.privateIDs))
	}
	e.op86(op, "deleteclaim", "welcome-2026")
	other := newKey(t)
	e.signedIn(other).mustReject(e.sign(other, 28934, nostr.Tags{{"-"}, {"claim", "welcome-2026"}}, ""), "restricted:")
}
