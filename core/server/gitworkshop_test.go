package server_test

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
)

// GitWorkshop v4's vocabulary (issue 25 part 1), with the event shapes of
// its NIP.md (DanConwayDev/gitworkshop NIP.md@08a3967): accepted, served by
// the tags clients filter on, and refused where the event carries no
// authority. A (owner) hosts "repo" with maintainer M and moderator O
// (maintainers-v3 roles, both listing back); R reports an issue and opens
// a PR; S is a stranger.

type gwRepo struct {
	e             *testServer
	cl            *client
	a, m, o, r, s key
	coord         string
	issue, pr     *nostr.Event
	tip           string
}

func newGWRepo(t *testing.T) *gwRepo {
	t.Helper()
	return newGWRepoWith(t, nil)
}

// newGWRepoWith is newGWRepo on a server configured by mutate.
func newGWRepoWith(t *testing.T, mutate func(c *config.Config)) *gwRepo {
	t.Helper()
	e := newEnv(t, mutate)
	g := &gwRepo{e: e, cl: e.dial(), a: newKey(t), m: newKey(t), o: newKey(t), r: newKey(t), s: newKey(t)}
	w := newWork(t)
	g.tip = w.commit("x")
	e.release(g.a, "repo", w, g.tip, role("M", g.a), role("m", g.m), role("o", g.o))
	g.coord = repoCoord(g.a, "repo")
	// M accepts; O acknowledges (self-o plus a record naming A).
	g.cl.mustAccept(e.sign(g.m, 30617, nostr.Tags{{"d", "repo"}, role("M", g.a), role("m", g.m)}, ""), "")
	g.cl.mustAccept(e.sign(g.o, 30617, nostr.Tags{{"d", "repo"}, role("M", g.a), role("o", g.o)}, ""), "")
	g.issue = e.sign(g.r, 1621, nostr.Tags{{"a", g.coord}, {"p", g.a.PK}, {"subject", "it breaks"}, {"t", "bug"}}, "details")
	g.cl.mustAccept(g.issue, "")
	g.pr = e.sign(g.r, 1618, nostr.Tags{{"a", g.coord}, {"p", g.a.PK}, {"subject", "fix"}, {"c", g.tip}, {"clone", e.cloneURL(g.a, "repo")}}, "")
	g.cl.mustAccept(g.pr, "")
	return g
}

// query runs f and returns the ids served.
func (g *gwRepo) ids(f nostr.Filter) map[string]bool {
	out := map[string]bool{}
	for _, evt := range g.cl.query(f) {
		out[evt.ID] = true
	}
	return out
}

func (g *gwRepo) mustServeBy(t *testing.T, what string, evt *nostr.Event, filters ...nostr.Filter) {
	t.Helper()
	for _, f := range filters {
		if !g.ids(f)[evt.ID] {
			t.Errorf("%s: not served by %v", what, f)
		}
	}
}

// Inline review comments (1111 with f, c, line and one q per maintainer
// coordinate) and the reply resolving a thread (l resolved): accepted from
// anyone, served by #f, #c, #q, #E and #e+#l.
func TestGitWorkshop_1111InlineCommentAndResolution(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	inline := e.sign(g.s, 1111, nostr.Tags{
		{"E", g.pr.ID, e.ws, g.r.PK}, {"K", "1618"}, {"P", g.r.PK, e.ws},
		{"e", g.pr.ID, e.ws, g.r.PK}, {"k", "1618"}, {"p", g.r.PK},
		{"q", g.coord, e.ws}, {"q", repoCoord(g.m, "repo"), e.ws},
		{"f", "src/parser/mod.rs"}, {"c", g.tip}, {"line", "42-48"},
	}, "```suggestion\n    let result = compute(x, y);\n```")
	g.cl.mustAccept(inline, "")
	resolve := e.sign(g.r, 1111, nostr.Tags{
		{"E", g.pr.ID, e.ws, g.r.PK}, {"K", "1618"}, {"P", g.r.PK, e.ws},
		{"e", inline.ID, e.ws, g.s.PK}, {"k", "1111"}, {"p", g.s.PK}, {"l", "resolved"},
	}, "marked as resolved")
	g.cl.mustAccept(resolve, "")
	g.mustServeBy(t, "inline comment", inline,
		nostr.Filter{Kinds: []int{1111}, Tags: nostr.TagMap{"q": {g.coord}}},
		nostr.Filter{Kinds: []int{1111}, Tags: nostr.TagMap{"q": {g.coord}, "f": {"src/parser/mod.rs"}}},
		nostr.Filter{Kinds: []int{1111}, Tags: nostr.TagMap{"E": {g.pr.ID}}},
		nostr.Filter{Kinds: []int{1111}, Tags: nostr.TagMap{"c": {g.tip}}})
	g.mustServeBy(t, "resolution", resolve, nostr.Filter{Kinds: []int{1111}, Tags: nostr.TagMap{"e": {inline.ID}, "l": {"resolved"}}})
}

// Reviews (7321): anyone may review; served by #e and #s; a malformed
// verdict and a q naming someone else's comment are refused; a newer
// review by the same reviewer is stored beside the older (regular kind:
// history kept, the newest counts for clients).
func TestGitWorkshop_7321Review(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	own := e.sign(g.s, 1111, nostr.Tags{{"E", g.pr.ID}, {"K", "1618"}, {"P", g.r.PK}, {"e", g.pr.ID}, {"k", "1618"}, {"p", g.r.PK},
		{"q", g.coord}, {"f", "a.go"}, {"c", g.tip}, {"line", "3"}}, "nit")
	other := e.sign(g.m, 1111, nostr.Tags{{"E", g.pr.ID}, {"K", "1618"}, {"P", g.r.PK}, {"e", g.pr.ID}, {"k", "1618"}, {"p", g.r.PK}}, "lgtm")
	g.cl.mustAccept(own, "")
	g.cl.mustAccept(other, "")
	review := func(k key, verdict string, q ...string) *nostr.Event {
		tags := nostr.Tags{{"e", g.pr.ID, e.ws, "root"}, {"p", g.r.PK}, {"s", verdict}, {"alt", "Pull request review: " + verdict}}
		for _, id := range q {
			tags = append(tags, nostr.Tag{"q", id, e.ws})
		}
		return e.sign(k, 7321, tags, "summary")
	}
	first := review(g.s, "Changes Required", own.ID)
	g.cl.mustAccept(first, "")
	e.clk.Advance(time.Second)
	second := review(g.s, "ACK")
	g.cl.mustAccept(second, "")
	g.mustServeBy(t, "review", second, nostr.Filter{Kinds: []int{7321}, Tags: nostr.TagMap{"e": {g.pr.ID}, "s": {"ACK"}}})
	if got := g.ids(nostr.Filter{Kinds: []int{7321}, Tags: nostr.TagMap{"e": {g.pr.ID}}}); !got[first.ID] || !got[second.ID] {
		t.Fatalf("the reviewer's history: %v", got)
	}
	g.cl.mustReject(review(g.s, "LGTM"), "invalid: a review (kind 7321)")
	g.cl.mustReject(e.sign(g.s, 7321, nostr.Tags{{"s", "ACK"}}, ""), "invalid: a review (kind 7321)")
	g.cl.mustReject(review(g.s, "NACK", other.ID), "invalid: a review's 'q' tags name the reviewer's own inline comments")
}

// Labels and subject edits (1985): the root's author, a confirmed
// maintainer and a moderator are accepted, a stranger refused; served by
// #e, #L and #l.
func TestGitWorkshop_1985LabelAuthority(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	label := func(k key, ns, value string) *nostr.Event {
		return e.sign(k, 1985, nostr.Tags{{"e", g.issue.ID, e.ws, "root"}, {"L", ns}, {"l", value, ns}}, "")
	}
	for _, k := range []key{g.r, g.a, g.m, g.o} {
		l := label(k, "#t", "needs-triage")
		g.cl.mustAccept(l, "")
		g.mustServeBy(t, "label", l,
			nostr.Filter{Kinds: []int{1985}, Tags: nostr.TagMap{"e": {g.issue.ID}}},
			nostr.Filter{Kinds: []int{1985}, Tags: nostr.TagMap{"L": {"#t"}, "l": {"needs-triage"}}})
	}
	rename := label(g.m, "#subject", "Fix race condition in the merge queue")
	g.cl.mustAccept(rename, "")
	g.mustServeBy(t, "subject edit", rename, nostr.Filter{Kinds: []int{1985}, Tags: nostr.TagMap{"L": {"#subject"}}})

	const refused = "restricted: a label or subject edit (kind 1985) of issue"
	g.cl.mustReject(label(g.s, "#t", "spam"), refused)
	g.cl.mustReject(label(g.s, "#subject", "Renamed by a stranger"), refused)
	// A label naming two roots needs authority over both: R wrote the
	// first issue, not S's.
	sIssue := e.sign(g.s, 1621, nostr.Tags{{"a", g.coord}, {"subject", "s"}}, "")
	g.cl.mustAccept(sIssue, "")
	both := e.sign(g.r, 1985, nostr.Tags{{"e", g.issue.ID, "", "root"}, {"e", sIssue.ID, "", "root"}, {"L", "#t"}, {"l", "dup", "#t"}}, "")
	g.cl.mustReject(both, "restricted: a label or subject edit (kind 1985) of issue "+sIssue.ID[:12])
}

// Cover notes (1624, lowercase e root, p, k): the root's author, a
// maintainer and a moderator are accepted, a stranger refused; served by #e.
func TestGitWorkshop_1624CoverNoteAuthority(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	note := func(k key, root *nostr.Event, kind string) *nostr.Event {
		return e.sign(k, 1624, nostr.Tags{{"e", root.ID, e.ws, "root"}, {"p", root.PubKey}, {"k", kind}, {"alt", "Cover note for a git issue or PR"}}, "**blocked on** #12")
	}
	for _, k := range []key{g.r, g.m, g.o} {
		n := note(k, g.pr, "1618")
		g.cl.mustAccept(n, "")
		g.mustServeBy(t, "cover note", n, nostr.Filter{Kinds: []int{1624}, Tags: nostr.TagMap{"e": {g.pr.ID}}})
	}
	g.cl.mustReject(note(g.s, g.pr, "1618"), "restricted: a cover note (kind 1624) of PR")
	g.cl.mustReject(note(g.s, g.issue, "1621"), "restricted: a cover note (kind 1624) of issue")
}

// Statuses (1630–1633) follow the same roles: a moderator may close an
// issue, a stranger may not.
func TestGitWorkshop_StatusAuthorityFollowsV3Roles(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	status := func(k key, kind int) *nostr.Event {
		return e.sign(k, kind, nostr.Tags{{"e", g.issue.ID, "", "root"}, {"a", g.coord}, {"p", g.r.PK}}, "")
	}
	g.cl.mustAccept(status(g.o, 1632), "")
	g.cl.mustAccept(status(g.r, 1630), "")
	g.cl.mustAccept(status(g.m, 1631), "")
	g.cl.mustReject(status(g.s, 1632), "restricted: a status (kind 1632) of issue")
}

// Pinned repositories (10617): ordered a tags to the author's own
// repositories; a pin of someone else's repository is refused. Follow
// lists (10018) of participants are stored.
func TestGitWorkshop_10617PinsOnlyOwnRepositories(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	w := newWork(t)
	e.release(g.a, "second", w, w.commit("y"))
	pins := e.sign(g.a, 10617, nostr.Tags{{"a", repoCoord(g.a, "second")}, {"a", g.coord}}, "")
	g.cl.mustAccept(pins, "")
	got := g.cl.query(nostr.Filter{Kinds: []int{10617}, Authors: []string{g.a.PK}})
	if len(got) != 1 || got[0].Tags[0][1] != repoCoord(g.a, "second") || got[0].Tags[1][1] != g.coord {
		t.Fatalf("pinned list served as %v, want the same order", got)
	}
	g.mustServeBy(t, "pinned list", pins, nostr.Filter{Kinds: []int{10617}, Tags: nostr.TagMap{"a": {g.coord}}})
	g.cl.mustReject(e.sign(g.r, 10617, nostr.Tags{{"a", g.coord}}, ""), "invalid: a pinned-repositories list (kind 10617) pins only its author's own repositories")
	e.clk.Advance(time.Second)
	g.cl.mustReject(e.sign(g.a, 10617, nostr.Tags{{"a", g.coord}, {"a", "30617:" + g.m.PK + ":repo"}}, ""), "invalid: a pinned-repositories list (kind 10617)")

	follows := e.sign(g.r, 10018, nostr.Tags{{"a", g.coord}, {"a", "30617:" + g.s.PK + ":elsewhere"}}, "")
	g.cl.mustAccept(follows, "")
	g.mustServeBy(t, "repository follow list", follows, nostr.Filter{Kinds: []int{10018}, Tags: nostr.TagMap{"a": {g.coord}}})
}

// NIP-C1 CI events GitWorkshop consumes (9841 job result, 9842 workflow
// result, 39842 workflow progress) reference their repository by `a` like
// any other event, and are served by #a, #c and #E.
func TestGitWorkshop_CIKindsReferenceTheirRepository(t *testing.T) {
	g := newGWRepo(t)
	e := g.e
	ctx := nostr.Tags{{"a", g.coord}, {"c", g.tip}, {"w", ".github/workflows/ci.yml", "ab"}, {"o", "pull_request"},
		{"E", g.pr.ID}, {"K", "1618"}, {"P", g.r.PK}}
	job := e.sign(g.s, 9841, append(cloneTags(ctx), nostr.Tag{"job", "test"}, nostr.Tag{"conclusion", "success"}), "ok")
	g.cl.mustAccept(job, "")
	wf := e.sign(g.s, 9842, append(cloneTags(ctx), nostr.Tag{"conclusion", "success"}, nostr.Tag{"q", job.ID}), "")
	g.cl.mustAccept(wf, "")
	progress := e.sign(g.s, 39842, append(cloneTags(ctx), nostr.Tag{"d", "run-1"}, nostr.Tag{"status", "in_progress"}), "")
	g.cl.mustAccept(progress, "")
	g.mustServeBy(t, "workflow result", wf,
		nostr.Filter{Kinds: []int{9842}, Tags: nostr.TagMap{"c": {g.tip}}},
		nostr.Filter{Kinds: []int{9841, 9842, 39842}, Tags: nostr.TagMap{"a": {g.coord}}})
	g.mustServeBy(t, "workflow progress", progress, nostr.Filter{Kinds: []int{39842}, Tags: nostr.TagMap{"a": {g.coord}}})
	g.mustServeBy(t, "job result", job, nostr.Filter{Kinds: []int{1111, 1619, 9841, 9842, 39842}, Tags: nostr.TagMap{"E": {g.pr.ID}}})
	// Not about a repository here: refused like any orphan.
	g.cl.mustReject(e.sign(g.s, 9841, nostr.Tags{{"a", "30617:" + g.s.PK + ":nowhere"}, {"c", g.tip}}, ""), "invalid:")
}

func cloneTags(ts nostr.Tags) nostr.Tags {
	out := make(nostr.Tags, len(ts))
	for i, t := range ts {
		out[i] = append(nostr.Tag(nil), t...)
	}
	return out
}

// GRASP-03 (issue 25 part 1): the pinned-repositories (10617) and
// repository-follow (10018) lists of a repository's people are pulled like
// their profiles and relay lists: here only on the repository's relay, and
// naming only repositories hosted elsewhere (so no tag filter of the
// repository's own would bring them).
func TestG03_ParticipantPinnedAndFollowListsSynced(t *testing.T) {
	listed := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newSyncEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	e.release(a, "repo", w, w.commit("one"), nostr.Tag{"relays", listed.url})
	pins := e.sign(a, 10617, nostr.Tags{{"a", repoCoord(a, "elsewhere")}}, "")
	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"p", a.PK}, {"subject", "bug"}}, "it breaks")
	follows := e.sign(b, 10018, nostr.Tags{{"a", repoCoord(newKey(t), "other")}}, "")
	listed.put(pins, follows)
	cl.mustAccept(issue, "")
	e.eventually("the owner's pinned list and the participant's follow list", syncStep, func() bool {
		return cl.served(pins.ID) && cl.served(follows.ID)
	})
}
