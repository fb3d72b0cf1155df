package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Moderation by the people who own a repository (issue 25 part 2): a
// confirmed maintainer or moderator hides events inside the repository
// with a moderation label (kind 1985, ["L","#moderation"],
// ["l","hide"|"show","#moderation"], e targets, a repository); every read
// surface leaves them out, the repository's maintainers and moderators
// still read them when signed in, a newer show undoes a hide, and the
// author's NIP-09 still deletes. The repository is newGWRepo's: A owns it,
// M maintains, O moderates, R reports, S is a stranger.

// reply is S's comment on R's issue, accepted.
func (g *gwRepo) reply() *nostr.Event {
	r := g.e.sign(g.s, 1111, nostr.Tags{{"E", g.issue.ID}, {"K", "1621"}, {"e", g.issue.ID}, {"k", "1621"}}, "reply")
	g.cl.mustAccept(r, "")
	return r
}

func (g *gwRepo) moderate(k key, action string, repo string, targets ...*nostr.Event) *nostr.Event {
	tags := nostr.Tags{{"L", "#moderation"}, {"l", action, "#moderation"}, {"a", repo}}
	for _, t := range targets {
		tags = append(tags, nostr.Tag{"e", t.ID})
	}
	return g.e.sign(k, 1985, tags, "")
}

// authedAfterHidden is a connection signed in as k: a REQ whose answer
// leaves something out is answered with the NIP-42 challenge (nothing is
// private here, so none came on connect).
func (g *gwRepo) authedAfterHidden(t *testing.T, k key, hidden *nostr.Event) *client {
	t.Helper()
	cl := g.e.dial()
	cl.send("REQ", "probe", nostr.Filter{IDs: []string{hidden.ID}})
	m := cl.next(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	g.e.authWith(cl, k, str(m[1]))
	return cl
}

// TestModeration_HiddenOnEverySurface: a moderator hides a stranger's spam
// issue and spam comment. REQ (by id, by repository, by kind), COUNT,
// NEG-OPEN, live delivery (a hide that arrived before its target, as sync
// may bring it) and the pages leave them out; the issue they sit beside and
// its other comment stay; the moderator and a maintainer, signed in, still
// read them.
func TestModeration_HiddenOnEverySurface(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	spam := e.sign(g.s, 1621, nostr.Tags{{"a", g.coord}, {"subject", "BUY CHEAP PILLS"}}, "spam body")
	g.cl.mustAccept(spam, "")
	comment := func(k key, content string) *nostr.Event {
		return e.sign(k, 1111, nostr.Tags{{"E", g.issue.ID}, {"K", "1621"}, {"P", g.r.PK}, {"e", g.issue.ID}, {"k", "1621"}, {"p", g.r.PK}}, content)
	}
	spamComment := comment(g.s, "spam comment")
	good := comment(g.m, "a real comment")
	g.cl.mustAccept(spamComment, "")
	g.cl.mustAccept(good, "")
	// a hide naming an event not here yet, which arrives later
	late := comment(g.s, "late spam")
	g.cl.mustAccept(g.moderate(g.o, "hide", g.coord, spam, spamComment, late), "")

	live := e.dial()
	live.subscribe("live", nostr.Filter{Kinds: []int{1111}, Limit: 0, LimitZero: true})
	e.dial().mustAccept(late, "")
	marker := comment(g.r, "marker")
	e.dial().mustAccept(marker, "")
	m := live.next(func(m []json.RawMessage) bool { return label(m) == "EVENT" && str(m[1]) == "live" })
	var first nostr.Event
	unmarshal(m[2], &first)
	if first.ID != marker.ID {
		t.Errorf("live delivery sent %q first, want the marker after the hidden comment", first.Content)
	}

	hidden := []*nostr.Event{spam, spamComment, late}
	hiddenIDs := []string{spam.ID, spamComment.ID, late.ID}
	anon := e.dial()
	for _, f := range []nostr.Filter{
		{IDs: hiddenIDs},
		{Kinds: []int{1621}, Tags: nostr.TagMap{"a": {g.coord}}},
		{Kinds: []int{1111}, Tags: nostr.TagMap{"E": {g.issue.ID}}},
		{Authors: []string{g.s.PK}},
		{},
	} {
		got := anon.query(f)
		if leaks := secretsIn(got, hiddenIDs); len(leaks) > 0 {
			t.Errorf("REQ %v serves hidden %v", f, leaks)
		}
	}
	if got := secretsIn(anon.query(nostr.Filter{Kinds: []int{1621, 1111}}), []string{g.issue.ID, good.ID, marker.ID}); len(got) != 3 {
		t.Errorf("REQ lost what was not hidden: %v", got)
	}
	if n := anon.count(nostr.Filter{Authors: []string{g.s.PK}, Kinds: []int{1621, 1111}}); n != 0 {
		t.Errorf("COUNT of the stranger's hidden events: %d, want 0", n)
	}
	if n := anon.count(nostr.Filter{Kinds: []int{1111}, Tags: nostr.TagMap{"E": {g.issue.ID}}}); n != 2 {
		t.Errorf("COUNT of the issue's comments: %d, want the 2 not hidden", n)
	}
	for _, f := range []nostr.Filter{{}, {Kinds: []int{1621, 1111}}} {
		l, msg := anon.negOpen(f)
		if l != "NEG-MSG" || len(anyIn(msg, hiddenIDs...)) > 0 {
			t.Errorf("NEG-OPEN %v: %s, hidden ids %v", f, l, anyIn(msg, hiddenIDs...))
		}
	}
	if _, msg := anon.negOpen(nostr.Filter{Kinds: []int{1111}}); len(anyIn(msg, good.ID)) == 0 {
		t.Errorf("NEG-OPEN lost the comment that is not hidden")
	}

	repo := e.base + "/" + g.a.Npub + "/repo.git"
	_, _, list := httpGet(t, repo+"/issues")
	if strings.Contains(list, "BUY CHEAP PILLS") || !strings.Contains(list, "it breaks") {
		t.Errorf("issues list: hidden issue shown or real one missing\n%.2000s", list)
	}
	if code, _, body := httpGet(t, repo+"/issues/"+spam.ID); code != http.StatusNotFound || strings.Contains(body, "spam body") {
		t.Errorf("hidden issue's page: %d", code)
	}
	_, _, page := httpGet(t, repo+"/issues/"+g.issue.ID)
	if strings.Contains(page, "spam comment") || strings.Contains(page, "late spam") || !strings.Contains(page, "a real comment") {
		t.Errorf("issue page shows a hidden comment or lost the real one\n%.3000s", page)
	}

	for _, k := range []key{g.o, g.m, g.a} {
		cl := g.authedAfterHidden(t, k, spam)
		if got := secretsIn(cl.query(nostr.Filter{IDs: hiddenIDs}), hiddenIDs); len(got) != len(hidden) {
			t.Errorf("a maintainer or moderator signed in reads %d of the %d hidden events", len(got), len(hidden))
		}
	}
	if got := g.authedAfterHidden(t, g.s, spam).query(nostr.Filter{IDs: hiddenIDs}); len(got) != 0 {
		t.Errorf("the hidden events' author, signed in, reads %d of them", len(got))
	}
}

// TestModeration_OnlyMaintainersAndModeratorsHide: the issue's author, a
// stranger and a maintainer of another repository naming this one are
// refused with restricted:; malformed labels with invalid:. A maintainer
// of another repository who names its own repository is accepted there
// but hides nothing here: the events do not belong to it.
func TestModeration_OnlyMaintainersAndModeratorsHide(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	reply := g.reply()
	const refused = "restricted: a moderation label counts only from a confirmed maintainer or moderator of " + "30617:"
	g.cl.mustReject(g.moderate(g.r, "hide", g.coord, reply), refused)
	g.cl.mustReject(g.moderate(g.s, "hide", g.coord, g.issue), refused)
	other := newKey(t)
	w := newWork(t)
	e.release(other, "other", w, w.commit("o"))
	g.cl.mustReject(g.moderate(other, "hide", g.coord, g.issue), refused)
	g.cl.mustAccept(g.moderate(other, "hide", repoCoord(other, "other"), g.issue, reply), "")
	if !e.dial().served(g.issue.ID) || !e.dial().served(reply.ID) {
		t.Error("another repository's moderator hid events of this one")
	}

	bad := map[string]nostr.Tags{
		"no action":      {{"L", "#moderation"}, {"a", g.coord}, {"e", reply.ID}},
		"two actions":    {{"L", "#moderation"}, {"l", "hide", "#moderation"}, {"l", "show", "#moderation"}, {"a", g.coord}, {"e", reply.ID}},
		"unknown action": {{"L", "#moderation"}, {"l", "delete", "#moderation"}, {"a", g.coord}, {"e", reply.ID}},
		"no repository":  {{"L", "#moderation"}, {"l", "hide", "#moderation"}, {"e", reply.ID}},
		"no target":      {{"L", "#moderation"}, {"l", "hide", "#moderation"}, {"a", g.coord}},
		"no namespace":   {{"l", "hide", "#moderation"}, {"a", g.coord}, {"e", reply.ID}},
	}
	for name, tags := range bad {
		ok, msg := g.cl.publish(e.sign(g.o, 1985, tags, ""))
		if ok || !strings.HasPrefix(msg, "invalid: moderation label: ") {
			t.Errorf("%s: OK %v %q, want invalid:", name, ok, msg)
		}
	}
	if !e.dial().served(reply.ID) {
		t.Error("a refused label hid the reply")
	}
}

// TestModeration_ShowUndoesHideAndRosterDecides: a newer show by a
// maintainer undoes a moderator's hide, a newer hide hides again; the
// hider's own NIP-09 of its label undoes it; a moderator removed from the
// roster no longer hides (the current roster, maintainers-v3 §2.6); the
// hides survive a restart.
func TestModeration_ShowUndoesHideAndRosterDecides(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	reply := g.reply()
	served := func() bool { return e.dial().served(reply.ID) }

	hide := g.moderate(g.o, "hide", g.coord, reply)
	g.cl.mustAccept(hide, "")
	if served() {
		t.Fatal("hidden reply served")
	}
	e.clk.Advance(time.Second)
	g.cl.mustAccept(g.moderate(g.m, "show", g.coord, reply), "")
	if !served() {
		t.Fatal("a newer show did not undo the hide")
	}
	e.clk.Advance(time.Second)
	again := g.moderate(g.o, "hide", g.coord, reply)
	g.cl.mustAccept(again, "")
	if served() {
		t.Fatal("a newer hide did not hide again")
	}
	e = e.restart()
	// the restarted server's fake clock starts from the wall clock again:
	// move past what was signed before, or a label would repeat one
	// (before connecting: a jump of the clock ends idle connections)
	e.clk.Advance(time.Hour)
	g.e, g.cl = e, e.dial()
	if served() {
		t.Fatal("the hide did not survive a restart")
	}
	// the hider deletes its label: the show before it counts again
	g.cl.mustAccept(e.deletes(g.o, again), "")
	if !served() {
		t.Fatal("the hider's NIP-09 of its label did not undo it")
	}
	e.clk.Advance(time.Second)
	g.cl.mustAccept(g.moderate(g.o, "hide", g.coord, reply), "")
	if served() {
		t.Fatal("hide after deletion")
	}
	// A drops O from the roster: O's hides no longer count
	e.clk.Advance(time.Second)
	g.cl.mustAccept(e.sign(g.a, 30617, nostr.Tags{{"d", "repo"}, {"clone", e.cloneURL(g.a, "repo")}, {"relays", e.ws}, role("M", g.a), role("m", g.m)}, ""), "")
	if !served() {
		t.Fatal("a moderator removed from the roster still hides")
	}
}

// TestModeration_AuthorDeletionStillWorks: the author of a hidden event
// deletes it with NIP-09; it is gone for the moderators too.
func TestModeration_AuthorDeletionStillWorks(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	reply := g.reply()
	g.cl.mustAccept(g.moderate(g.o, "hide", g.coord, reply), "")
	mod := g.authedAfterHidden(t, g.o, reply)
	if !mod.served(reply.ID) {
		t.Fatal("the moderator does not read the hidden reply")
	}
	g.cl.mustAccept(e.deletes(g.s, reply), "")
	if mod.served(reply.ID) {
		t.Error("the author's deletion did not delete the hidden reply")
	}
}

// TestModeration_AnnouncementsAndStatesCannotBeHidden: a moderator's hide
// naming the repository's announcement and the issue's moderation label
// hides neither.
func TestModeration_AnnouncementsAndStatesCannotBeHidden(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	anns := g.cl.query(nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Authors: []string{g.a.PK}, Tags: nostr.TagMap{"d": {"repo"}}})
	if len(anns) != 1 {
		t.Fatalf("announcement: %d", len(anns))
	}
	first := g.moderate(g.o, "hide", g.coord, g.issue)
	g.cl.mustAccept(first, "")
	g.cl.mustAccept(g.moderate(g.m, "hide", g.coord, anns[0], first), "")
	if !e.dial().served(anns[0].ID) || !e.dial().served(first.ID) {
		t.Error("an announcement or a moderation label was hidden")
	}
	if e.dial().served(g.issue.ID) {
		t.Error("the issue is not hidden")
	}
}
