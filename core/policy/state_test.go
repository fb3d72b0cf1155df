package policy

import (
	"testing"
)

func TestG01G2h_StateWithoutAnnouncementRejected(t *testing.T) {
	e := newEnv(t, nil)
	d := e.decide(e.state(pkA, "r", "refs/heads/main", oid('1')))
	if d.Outcome != Rejected || d.Msg != "invalid: no announcement exists for this repository" {
		t.Fatalf("got %s %q", d.Outcome, d.Msg)
	}
}

func TestG01G2g_StateFromNonMaintainerRejected(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true, pkB))
	d := e.decide(e.state(pkX, "r", "refs/heads/main", oid('1')))
	if d.Outcome != Rejected || d.Msg != "invalid: author not authorized for this repository" {
		t.Fatalf("got %s %q", d.Outcome, d.Msg)
	}
}

func TestG01P3_StateHeldUntilGitData(t *testing.T) {
	e := newEnv(t, nil)
	e.hold(e.ann(pkA, "r", true))
	s := e.state(pkA, "r", "refs/heads/main", oid('1'), "refs/tags/v1", oid('2'), "refs/tags/v1^{}", oid('3'))
	d := e.decide(s)
	want(t, d, Hold, MsgPurgatory)
	wantEffect(t, d, AwaitGitData, repo(pkA, "r"))
	if got := d.Effects[0].OIDs; len(got) != 2 || got[0] != oid('1') || got[1] != oid('2') {
		t.Fatalf("awaited oids %v (peeled entries must not be awaited)", got)
	}
	e.hold(s)
	want(t, e.decide(s), Shadow, "duplicate: in purgatory")
	want(t, e.release(s), Store, "")
}

func TestG01G2_StateWithDataPresentIsStoredAndAligned(t *testing.T) {
	e := newEnv(t, nil)
	e.hold(e.ann(pkA, "r", true))
	e.git.add(pkA, "r", oid('1'))
	d := e.decide(e.state(pkA, "r", "refs/heads/main", oid('1')))
	want(t, d, Store, "")
	wantEffect(t, d, AlignRepo, repo(pkA, "r"))
	wantEffect(t, d, ReleaseHeld, repo(pkA, "r"))

	// Partially present is not present.
	d = e.decide(e.state(pkA, "r", "refs/heads/main", oid('1'), "refs/heads/dev", oid('2')))
	want(t, d, Hold, "purgatory:")
}

func TestN34_2_EmptyStateAlignsToEmptyRepo(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	d := e.decide(e.state(pkA, "r"))
	want(t, d, Store, "")
	wantEffect(t, d, AlignRepo, repo(pkA, "r"))
}

func TestN34_2_MalformedStateRejected(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	want(t, e.decide(e.state(pkA, "r", "refs/heads/main", "not-an-oid")), Rejected, "invalid: repository state:")
	want(t, e.decide(e.state(pkA, "r", "refs/heads/../x", oid('1'))), Rejected, "invalid: repository state:")
}

func TestG01G3_StateFromRecursiveMaintainer(t *testing.T) {
	e := newEnv(t, nil)
	e.git.add(pkA, "r", oid('1'))
	// A hosts and lists B; B (no hosting) lists C; C publishes only a
	// state. Changed by maintainers-v3.md §3: "G01-G3 'B state-only, no
	// announcement → authorised' now rejects" — C never listed back.
	e.stored(e.ann(pkA, "r", true, pkB), e.ann(pkB, "r", false, pkC))
	want(t, e.decide(e.state(pkC, "r", "refs/heads/main", oid('1'))), Rejected, "invalid: author not authorized for this repository")

	// Positive control: B lists A back, C lists B back (§5 case 5).
	e = newEnv(t, nil)
	e.git.add(pkA, "r", oid('1'))
	e.stored(e.ann(pkA, "r", true, pkB), e.ann(pkB, "r", false, pkA, pkC), e.ann(pkC, "r", false, pkB))
	d := e.decide(e.state(pkC, "r", "refs/heads/main", oid('1')))
	want(t, d, Store, "")
	wantEffect(t, d, AlignRepo, repo(pkA, "r"))
}

func TestG01G2i_StateScopedToReposThatAuthorizeIt(t *testing.T) {
	e := newEnv(t, nil)
	// A and B both host "r"; A lists B, B does not list A. Changed by
	// maintainers-v3.md §3 (one-way listings lose authority, §5 case 20):
	// B's state no longer applies to A's repo.
	e.stored(e.ann(pkA, "r", true, pkB), e.ann(pkB, "r", true))
	d := e.decide(e.state(pkB, "r", "refs/heads/main", oid('1')))
	want(t, d, Hold, "purgatory:")
	wantEffect(t, d, AwaitGitData, repo(pkB, "r"))
	if d.Has(AwaitGitData, repo(pkA, "r")) {
		t.Fatalf("B's state applied to A's repo although B never listed A back: %v", d.Effects)
	}
	d = e.decide(e.state(pkA, "r", "refs/heads/main", oid('2')))
	wantEffect(t, d, AwaitGitData, repo(pkA, "r"))
	if d.Has(AwaitGitData, repo(pkB, "r")) {
		t.Fatalf("A's state applied to B's repo, which does not list A: %v", d.Effects)
	}
	// Positive control: once B lists A back, B's state applies to both.
	e.stored(e.ann(pkB, "r", true, pkA))
	d = e.decide(e.state(pkB, "r", "refs/heads/main", oid('3')))
	wantEffect(t, d, AwaitGitData, repo(pkA, "r"))
	wantEffect(t, d, AwaitGitData, repo(pkB, "r"))
}

func TestG01G2_AuthorizedOnlyByNonHostedAnnouncementsRejected(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkB, "r", false))
	want(t, e.decide(e.state(pkB, "r", "refs/heads/main", oid('1'))), Rejected, "invalid: no announcement exists for this repository")
}

func TestG01G2_OlderStateIsNotReapplied(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	e.git.add(pkA, "r", oid('1'), oid('2'))
	old := e.state(pkA, "r", "refs/heads/main", oid('1'))
	e.stored(e.state(pkA, "r", "refs/heads/main", oid('2')))
	want(t, e.decide(old), Shadow, "duplicate:")
}

func TestStateGitErrorIsRetryable(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	e.git.err = errBoom
	want(t, e.decide(e.state(pkA, "r", "refs/heads/main", oid('1'))), Rejected, "error: could not check git data")
}
