package nip34

import (
	"reflect"
	"slices"
	"testing"
)

func TestN34_6_PRParsing(t *testing.T) {
	repo := "30617:" + pkA + ":r"
	e := ev(KindPR, pkB,
		[]string{"a", repo}, []string{"a", "30617:" + pkC + ":r"}, []string{"a", "30618:" + pkA + ":r"}, []string{"a", "junk"},
		[]string{"c", oid('C')}, []string{"clone", "https://x/y.git", "https://z/y.git"},
		[]string{"merge-base", oid('b')}, []string{"branch-name", "feat"}, []string{"subject", "S"},
		[]string{"r", oid('1')})
	p, err := ParsePR(e)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tip != oid('c') || p.MergeBase != oid('b') || p.BranchName != "feat" || p.Subject != "S" {
		t.Fatalf("got %+v", p)
	}
	if !reflect.DeepEqual(p.Repos, []RepoRef{{Pubkey: pkA, Identifier: "r"}, {Pubkey: pkC, Identifier: "r"}}) {
		t.Fatalf("Repos = %v", p.Repos)
	}
	if !reflect.DeepEqual(p.Clone, []string{"https://x/y.git", "https://z/y.git"}) || p.Root != "" {
		t.Fatalf("Clone %v Root %q", p.Clone, p.Root)
	}
	if _, err := ParsePR(ev(KindPR, pkB, []string{"a", repo})); err == nil {
		t.Fatal("PR without c accepted")
	}
	if _, err := ParsePR(ev(KindPR, pkB, []string{"a", repo}, []string{"c", "main"})); err == nil {
		t.Fatal("PR with non-oid c accepted")
	}
	if _, err := ParsePR(ev(KindIssue, pkB, []string{"c", oid('1')})); err == nil {
		t.Fatal("issue parsed as PR")
	}
}

func TestN34_7_PRUpdateRoot(t *testing.T) {
	root := pkD
	u, err := ParsePR(ev(KindPRUpdate, pkB, []string{"E", "nothex"}, []string{"E", root}, []string{"P", pkB}, []string{"c", oid('2')}))
	if err != nil {
		t.Fatal(err)
	}
	if u.Root != root || u.Kind != KindPRUpdate || len(u.Repos) != 0 {
		t.Fatalf("got %+v", u)
	}
}

func TestN34_5_PatchAndN34_8_IssueStatus(t *testing.T) {
	repo := "30617:" + pkA + ":r"
	p, err := ParsePatch(ev(KindPatch, pkB, []string{"a", repo}, []string{"t", "root"}, []string{"commit", oid('1')}, []string{"parent-commit", oid('2')}, []string{"e", pkC}))
	if err != nil || !p.Root || p.RootRevision || p.Commit != oid('1') || p.ParentCommit != oid('2') || len(p.Repos) != 1 || !reflect.DeepEqual(p.Replies, []string{pkC}) {
		t.Fatalf("patch %+v %v", p, err)
	}
	i, err := ParseIssue(ev(KindIssue, pkB, []string{"a", repo}, []string{"subject", "bug"}, []string{"t", "l1"}))
	if err != nil || i.Subject != "bug" || len(i.Repos) != 1 || !reflect.DeepEqual(i.Labels, []string{"l1"}) {
		t.Fatalf("issue %+v %v", i, err)
	}
	s, err := ParseStatus(ev(KindStatusMerged, pkA, []string{"e", pkD, "", "mention"}, []string{"e", pkC, "", "root"}, []string{"merge-commit", oid('9')}, []string{"applied-as-commits", oid('7'), oid('8')}))
	if err != nil || !reflect.DeepEqual(s.Roots, []string{pkC}) || s.MergeCommit != oid('9') || len(s.AppliedAsCommits) != 2 {
		t.Fatalf("status %+v %v", s, err)
	}
	s, err = ParseStatus(ev(KindStatusClosed, pkA, []string{"e", pkD}))
	if err != nil || !reflect.DeepEqual(s.Roots, []string{pkD}) {
		t.Fatalf("unmarked status %+v %v", s, err)
	}
	if _, err := ParseStatus(ev(KindStatusOpen, pkA, []string{"a", repo})); err == nil {
		t.Fatal("status without e accepted")
	}
}

func TestCommentAndGraspList(t *testing.T) {
	c, err := ParseComment(ev(KindComment, pkB, []string{"E", pkC, "", pkA}, []string{"K", "1621"}, []string{"e", pkD}, []string{"k", "1111"}, []string{"A", "30617:" + pkA + ":r"}))
	if err != nil || !reflect.DeepEqual(c.RootIDs, []string{pkC}) || c.RootKind != "1621" || !reflect.DeepEqual(c.ParentIDs, []string{pkD}) || len(c.RootAddrs) != 1 || c.ParentKind != "1111" {
		t.Fatalf("comment %+v %v", c, err)
	}
	g, err := ParseGraspList(ev(KindGraspList, pkB, []string{"g", "wss://one"}, []string{"g", "https://not-ws"}, []string{"g", "ws://two:7334"}, []string{"g", "wss://u@three"}))
	if err != nil || !reflect.DeepEqual(g.Servers, []string{"wss://one", "ws://two:7334"}) {
		t.Fatalf("grasp list %+v %v", g, err)
	}
	if _, err := ParseGraspList(ev(KindGraspList, pkB, []string{"g", "https://x"})); err == nil {
		t.Fatal("grasp list without ws URLs accepted")
	}
}

func TestG01R4_ReferencesOf(t *testing.T) {
	repo := "30617:" + pkA + ":r"
	e := ev(KindNote, pkB,
		[]string{"a", repo}, []string{"A", repo}, []string{"q", "30617:" + pkC + ":other"},
		[]string{"e", pkD}, []string{"E", pkC}, []string{"q", pkB}, []string{"e", "nothex"}, []string{"a", "bad"},
		[]string{"p", pkA}, []string{"e"})
	r := ReferencesOf(e)
	if !reflect.DeepEqual(r.EventIDs, []string{pkD, pkC, pkB}) {
		t.Fatalf("EventIDs = %v", r.EventIDs)
	}
	if !reflect.DeepEqual(r.Repos(), []RepoRef{{Pubkey: pkA, Identifier: "r"}, {Pubkey: pkC, Identifier: "other"}}) {
		t.Fatalf("Repos = %v", r.Repos())
	}
	if ReferencesOf(ev(KindNote, pkB, []string{"p", pkA})).Empty() != true {
		t.Fatal("p tag counted as a reference")
	}
}

func TestRootKinds(t *testing.T) {
	for k, want := range map[int]bool{KindPatch: true, KindPR: true, KindPRUpdate: true, KindIssue: true, KindComment: false, KindNote: false, KindStatusOpen: false} {
		if IsRootKind(k) != want {
			t.Errorf("IsRootKind(%d) != %v", k, want)
		}
	}
	// RootKinds is the filter form of IsRootKind: the same kinds, no others.
	roots := RootKinds()
	for k := 0; k <= 40000; k++ {
		if IsRootKind(k) != slices.Contains(roots, k) {
			t.Errorf("RootKinds() %v and IsRootKind(%d) disagree", roots, k)
		}
	}
	for k, want := range map[int]bool{KindAnnouncement: true, KindState: true, KindPR: true, KindPRUpdate: true, KindIssue: false, KindPatch: false} {
		if NeedsGitData(k) != want {
			t.Errorf("NeedsGitData(%d) != %v", k, want)
		}
	}
}

// TestKindName: the names OK messages, logs and pages use for each kind.
func TestKindName(t *testing.T) {
	for k, want := range map[int]string{KindAnnouncement: "announcement", KindState: "state", KindIssue: "issue",
		KindPatch: "patch", KindPR: "PR", KindPRUpdate: "PR update", KindComment: "comment", KindStatusDraft: "status", KindNote: "kind 1"} {
		if got := KindName(k); got != want {
			t.Errorf("KindName(%d) = %q, want %q", k, got, want)
		}
	}
}
