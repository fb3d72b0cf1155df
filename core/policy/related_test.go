package policy

import (
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
)

func TestG01R4_EventsReferencingAcceptedRepoOrRoot(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	issue := e.event(nip34.KindIssue, pkX, []string{"a", coord(pkA, "r")}, []string{"subject", "bug"})
	want(t, e.decide(issue), Store, "")
	e.stored(issue)

	cases := map[string][2]any{
		"comment via A":         {nip34.KindComment, [][]string{{"A", coord(pkA, "r")}, {"K", "30617"}}},
		"kind 1 via q repo":     {nip34.KindNote, [][]string{{"q", coord(pkA, "r")}}},
		"comment via E issue":   {nip34.KindComment, [][]string{{"E", issue.ID}, {"K", "1621"}}},
		"kind 1 via e issue":    {nip34.KindNote, [][]string{{"e", issue.ID}}},
		"issue quoting issue":   {nip34.KindIssue, [][]string{{"q", issue.ID}}},
		"status with root":      {nip34.KindStatusClosed, [][]string{{"e", issue.ID, "", "root"}}},
		"patch via a":           {nip34.KindPatch, [][]string{{"a", coord(pkA, "r")}, {"t", "root"}}},
		"reaction via e (deep)": {7, [][]string{{"e", issue.ID}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			want(t, e.decide(e.event(c[0].(int), pkX, c[1].([][]string)...)), Store, "")
		})
	}
}

func TestG01R4_OrphansAndOtherReposRejected(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	want(t, e.decide(e.event(nip34.KindIssue, pkX, []string{"subject", "orphan"})), Rejected, "invalid: event must tag a repository accepted")
	want(t, e.decide(e.event(nip34.KindIssue, pkX, []string{"a", coord(pkC, "other")})), Rejected, "invalid:")
	want(t, e.decide(e.event(nip34.KindComment, pkX, []string{"A", coord(pkC, "r")})), Rejected, "invalid: event must tag (a/A/q/e/E)")
	want(t, e.decide(e.event(nip34.KindNote, pkX)), Rejected, "invalid:")
	want(t, e.decide(e.event(nip34.KindStatusOpen, pkX, []string{"a", coord(pkA, "r")})), Rejected, "invalid: status has no 'e' tag")
	want(t, e.decide(e.event(nip34.KindStatusOpen, pkX, []string{"e", pkC})), Rejected, "invalid: status must tag")
}

func TestG01R4_ForwardReference(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	note := e.event(nip34.KindNote, pkX)
	want(t, e.decide(note), Rejected, "invalid:")
	e.stored(e.event(nip34.KindIssue, pkB, []string{"a", coord(pkA, "r")}, []string{"e", note.ID}))
	want(t, e.decide(note), Store, "")
}

func TestG01R4_ReferenceDepthIsBounded(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	k1 := e.event(nip34.KindNote, pkX, []string{"q", coord(pkA, "r")})
	want(t, e.decide(k1), Store, "")
	e.stored(k1)
	k2 := e.event(nip34.KindNote, pkX, []string{"e", k1.ID}) // two steps from the repo
	want(t, e.decide(k2), Store, "")
	e.stored(k2)
	k3 := e.event(nip34.KindNote, pkX, []string{"e", k2.ID}) // three steps: beyond the default
	want(t, e.decide(k3), Rejected, "invalid:")

	// Referenced *by* a stored note that is itself one step away.
	n := e.event(nip34.KindNote, pkX)
	e.stored(e.event(nip34.KindNote, pkB, []string{"q", coord(pkA, "r")}, []string{"e", n.ID}))
	want(t, e.decide(n), Store, "")

	// Issues must be direct: one tagging only a note is an orphan.
	want(t, e.decide(e.event(nip34.KindIssue, pkX, []string{"e", k1.ID})), Rejected, "invalid:")

	deep := newEnv(t, func(o *Options) { o.MaxReferenceDepth = 3 })
	deep.stored(deep.ann(pkA, "r", true), k1, k2)
	want(t, deep.decide(k3), Store, "")
}

func TestG01R4x_EventsForHeldRepoAreHeldWithIt(t *testing.T) {
	e := newEnv(t, nil)
	e.hold(e.ann(pkA, "r", true))
	issue := e.event(nip34.KindIssue, pkX, []string{"a", coord(pkA, "r")})
	d := e.decide(issue)
	want(t, d, Hold, "purgatory:")
	wantEffect(t, d, AwaitRepo, repo(pkA, "r"))

	e.hold(issue)
	c := e.event(nip34.KindComment, pkX, []string{"E", issue.ID})
	d = e.decide(c)
	want(t, d, Hold, "purgatory:")
	if d.Effects[0].Kind != AwaitEvent || d.Effects[0].EventID != issue.ID {
		t.Fatalf("effects %v", d.Effects)
	}

	// Once the repository is served, the same issue is stored.
	e2 := newEnv(t, nil)
	e2.stored(e2.ann(pkA, "r", true))
	want(t, e2.release(issue), Store, "")
}

// Deletion requests are always accepted. Whether an event was
// deleted by its author is decided by the relay for every write (one owner,
// relay.deletedByAuthor, issue 9 part 3), so the rules accept a deleted
// event here and the relay refuses it.
func TestR3_DeletionsAreAccepted(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	issue := e.event(nip34.KindIssue, pkX, []string{"a", coord(pkA, "r")})
	del := e.event(nip34.KindDeletion, pkX, []string{"e", issue.ID})
	want(t, e.decide(del), Store, "")
}

func TestN34_9_GraspLists(t *testing.T) {
	e := newEnv(t, nil)
	want(t, e.decide(e.event(nip34.KindGraspList, pkX, []string{"g", "wss://grasp.example"})), Store, "")
	want(t, e.decide(e.event(nip34.KindGraspList, pkX, []string{"g", "not a url"})), Rejected, "invalid: grasp list")
}

// G08-5: kind 10318 (a user's encrypted private server list) is accepted
// whatever it references; who may read it is core/visibility's rule.
func TestG08_5_PrivateGraspListAccepted(t *testing.T) {
	e := newEnv(t, nil)
	want(t, e.decide(e.event(nip34.KindPrivateGraspList, pkX)), Store, "")
}
