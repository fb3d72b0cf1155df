package policy

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

func (e *rig) pr(pk string, tip string, tags ...[]string) *nostr.Event {
	base := [][]string{{"c", tip}, {"clone", e.svc.CloneURL(pkA, "r")}, {"subject", "s"}}
	return e.event(nip34.KindPR, pk, append(base, tags...)...)
}

func TestG01P4_PRWithoutGitDataIsHeld(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	p := e.pr(pkX, oid('9'), []string{"a", coord(pkA, "r")})
	d := e.decide(p)
	want(t, d, Hold, "purgatory:")
	if !strings.Contains(d.Msg, oid('9')) || !strings.Contains(d.Msg, "refs/nostr/"+p.ID) {
		t.Fatalf("msg %q does not say what it waits for", d.Msg)
	}
	wantEffect(t, d, AwaitGitData, repo(pkA, "r"))
	e.hold(p)
	want(t, e.decide(p), Shadow, "duplicate: in purgatory")
	want(t, e.release(p), Store, "")
}

func TestG01G5b_PRWithTipPresentIsStoredAndBound(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	e.git.add(pkA, "r", oid('9'))
	p := e.pr(pkX, oid('9'), []string{"a", coord(pkA, "r")})
	d := e.decide(p)
	want(t, d, Store, "")
	wantEffect(t, d, BindNostrRef, repo(pkA, "r"))
	if d.Effects[0].EventID != p.ID || d.Effects[0].OIDs[0] != oid('9') {
		t.Fatalf("bind effect %v", d.Effects[0])
	}
}

func TestN34_6_PRRules(t *testing.T) {
	e := newEnv(t, nil)
	// B lists A back: a one-way listing makes B no maintainer of A's repo
	// (maintainers-v3.md §3), so B's coordinate would reach no hosted repo.
	e.stored(e.ann(pkA, "r", true, pkB), e.ann(pkB, "r", false, pkA))
	want(t, e.decide(e.event(nip34.KindPR, pkX, []string{"a", coord(pkA, "r")})), Rejected, "invalid: PR event: missing 'c' tag")
	want(t, e.decide(e.pr(pkX, oid('1'))), Rejected, "invalid: PR event must reference a repository")
	want(t, e.decide(e.pr(pkX, oid('1'), []string{"a", coord(pkC, "r")})), Rejected, "invalid: PR event must reference a repository accepted")
	// A PR naming only the maintainer's coordinate is checked against the
	// hosted repo that maintainer belongs to.
	e.git.add(pkA, "r", oid('2'))
	d := e.decide(e.pr(pkX, oid('2'), []string{"a", coord(pkB, "r")}))
	want(t, d, Store, "")
	wantEffect(t, d, BindNostrRef, repo(pkA, "r"))
}

func TestN34_7_PRUpdateFindsRepoThroughRootPR(t *testing.T) {
	e := newEnv(t, nil)
	e.stored(e.ann(pkA, "r", true))
	root := e.pr(pkX, oid('1'), []string{"a", coord(pkA, "r")})
	e.stored(root)
	upd := e.event(nip34.KindPRUpdate, pkX, []string{"E", root.ID}, []string{"P", pkX}, []string{"c", oid('3')})
	d := e.decide(upd)
	want(t, d, Hold, "purgatory:")
	wantEffect(t, d, AwaitGitData, repo(pkA, "r"))
	orphan := e.event(nip34.KindPRUpdate, pkX, []string{"E", pkC}, []string{"c", oid('3')})
	want(t, e.decide(orphan), Rejected, "invalid:")
}

func TestG01R4x_PRForHeldRepoWaitsForRepo(t *testing.T) {
	e := newEnv(t, nil)
	e.hold(e.ann(pkA, "r", true))
	e.git.add(pkA, "r", oid('5'))
	d := e.decide(e.pr(pkX, oid('5'), []string{"a", coord(pkA, "r")}))
	want(t, d, Hold, "purgatory:")
	wantEffect(t, d, AwaitRepo, repo(pkA, "r"))
	wantEffect(t, d, BindNostrRef, repo(pkA, "r"))
}
