package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
)

// The findings of the second audit on GRASP-08 (security-audit-2026-11b.md),
// each reproduced end to end: a routine action of the owner must not make
// private data readable by a stranger, now or after a restart, while the
// members still read it.

// strangerSees reports what of ids (and of texts, on the repository's
// page and the landing page) a stranger reads on e, unauthenticated and
// signed in as stranger: REQ by kinds and by author, and, for clone, a
// clone without a token and with the stranger's.
func strangerSees(t *testing.T, e *testServer, stranger key, owner key, clone string, ids []string, texts ...string) []string {
	t.Helper()
	var leaks []string
	anon := e.dial()
	signed := e.dial()
	signed.send("REQ", "hello", nostr.Filter{Kinds: []int{nip34.KindPrivateGraspList}})
	e.signIn(signed, stranger)
	for who, cl := range map[string]*client{"anonymous": anon, "stranger": signed} {
		for _, f := range []nostr.Filter{
			{Kinds: []int{30617, 30618, 1621, 1111, 1618, 1630, 5}},
			{Authors: []string{owner.PK}},
		} {
			for _, id := range secretsIn(cl.query(f), ids) {
				leaks = append(leaks, who+" REQ "+f.String()+": "+id)
			}
		}
	}
	if clone != "" {
		if out, err := gitRun(t, t.TempDir(), "clone", "-q", clone, "c"); err == nil {
			leaks = append(leaks, "anonymous clone succeeded: "+out)
		}
		if out, err := e.gitAs(stranger, clone, t.TempDir(), "clone", "-q", clone, "c"); err == nil {
			leaks = append(leaks, "stranger's clone succeeded: "+out)
		}
		if code, _, body := httpGet(t, clone); code != http.StatusNotFound || len(anyIn(body, texts...)) > 0 {
			leaks = append(leaks, "repository page shown")
		}
	}
	_, _, landing := httpGet(t, e.base+"/")
	for _, s := range anyIn(landing, texts...) {
		leaks = append(leaks, "landing page shows "+s)
	}
	return leaks
}

// memberReads fails t unless member reads ids over REQ and clones clone
// at tip with its NIP-98 token (the positive control).
func memberReads(t *testing.T, e *testServer, member key, clone, tip string, ids []string) {
	t.Helper()
	cl := e.dial()
	cl.send("REQ", "hello", nostr.Filter{Kinds: []int{nip34.KindPrivateGraspList}})
	e.signIn(cl, member)
	if got := secretsIn(cl.query(nostr.Filter{IDs: ids}), ids); len(got) != len(ids) {
		t.Errorf("member reads %d of %d private events", len(got), len(ids))
	}
	if clone == "" {
		return
	}
	dst := t.TempDir()
	if out, err := e.gitAs(member, clone, dst, "clone", "-q", clone, "c"); err != nil {
		t.Errorf("member's clone: %v\n%s", err, out)
	} else if head := mustGit(t, dst+"/c", "rev-parse", "HEAD"); head != tip {
		t.Errorf("member cloned %s, want %s", head, tip)
	}
}

// F19: the owner deletes the private repository's announcement (NIP-09,
// how NIP-34 clients delete a repository). The repository stays private,
// and unlisted: no stranger reads its git data, states, issues or
// comments, nor its page, before or after a restart; the owner still does.
func TestPrivate_F19_DeletedAnnouncementKeepsTheRepositoryPrivate(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner, stranger := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	p.conn.mustAccept(e.deletes(owner, p.ann), "")
	if p.conn.served(p.ann.ID) {
		t.Fatal("the announcement was not deleted")
	}
	secrets := []string{p.state.ID, p.issue.ID, p.comment.ID}
	for round, srv := range []*testServer{e, nil} {
		if round == 1 {
			srv = e.restart()
		}
		if leaks := strangerSees(t, srv, stranger, owner, p.clone, secrets, "topsecret-name", p.tip); len(leaks) > 0 {
			t.Errorf("round %d (1: after a restart): %s", round, strings.Join(leaks, "; "))
		}
		memberReads(t, srv, owner, p.clone, p.tip, secrets)
	}
}

// F21: the owner drops a maintainer from a private repository. The
// dropped maintainer's own copy, which holds the private history, keeps
// the privacy it had (a stranger reads nothing of it, before or after a
// restart; its maintainer still does), and the dropped maintainer no
// longer reads the owner's repository.
func TestPrivate_F21_DroppedMaintainersCopyStaysPrivate(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner, maint, stranger := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	tip := w.commit("secret history")
	oc := e.dial()
	ann := e.announcement(owner, "vault", nostr.Tag{"private", "true"}, nostr.Tag{"maintainers", maint.PK})
	oc.send("EVENT", ann)
	e.signIn(oc, owner)
	oc.mustAccept(ann, purg)
	oc.mustAccept(e.state(owner, "vault", map[string]string{"refs/heads/main": tip}, "refs/heads/main"), purg)
	ownerClone, maintClone := e.cloneURL(owner, "vault"), e.cloneURL(maint, "vault")
	if out, err := e.gitAs(owner, ownerClone, w.dir, "push", "--porcelain", ownerClone, "main:refs/heads/main"); err != nil {
		t.Fatalf("owner's push: %v\n%s", err, out)
	}
	e.eventually("the announcement released", 0, func() bool { return oc.served(ann.ID) })
	// the maintainer lists back (its copy private through the roster) and
	// gets the private history in its copy
	mc := e.signedIn(maint)
	back := e.announcement(maint, "vault", nostr.Tag{"maintainers", owner.PK})
	mc.mustAccept(back, "")
	e.eventually("the maintainer's copy holds the history", 0, func() bool {
		out, err := e.gitAs(maint, maintClone, t.TempDir(), "ls-remote", maintClone)
		return err == nil && strings.Contains(out, tip)
	})
	issue := e.sign(owner, 1621, nostr.Tags{{"a", nip34.RepoRef{Pubkey: owner.PK, Identifier: "vault"}.String()}, {"subject", "secret issue"}}, "")
	oc.mustAccept(issue, "")
	if !mc.served(issue.ID) {
		t.Fatal("the maintainer does not read the private issue before being dropped")
	}
	// the owner drops the maintainer
	e.clk.Advance(2e9)
	oc.mustAccept(e.announcement(owner, "vault", nostr.Tag{"private", "true"}), "")
	for round, srv := range []*testServer{e, nil} {
		if round == 1 {
			srv = e.restart()
		}
		if leaks := strangerSees(t, srv, stranger, maint, maintClone, []string{back.ID}, tip); len(leaks) > 0 {
			t.Errorf("round %d: dropped maintainer's copy: %s", round, strings.Join(leaks, "; "))
		}
		memberReads(t, srv, maint, maintClone, tip, []string{back.ID})
		// and the dropped maintainer reads the owner's repository no more
		if leaks := strangerSees(t, srv, maint, owner, ownerClone, []string{issue.ID}); len(leaks) > 0 {
			t.Errorf("round %d: the dropped maintainer still reads the owner's repository: %s", round, strings.Join(leaks, "; "))
		}
		memberReads(t, srv, owner, ownerClone, tip, []string{issue.ID})
	}
}

// F22: a comment on a private issue is private through the issue it
// tags. Deleting the issue leaves the comment, and the deletion request,
// private: no stranger reads them before or after a restart; the owner
// still reads the comment.
func TestPrivate_F22_CommentsOfADeletedIssueStayPrivate(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner, stranger := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	del := e.deletes(owner, p.issue)
	p.conn.mustAccept(del, "")
	if p.conn.served(p.issue.ID) {
		t.Fatal("the issue was not deleted")
	}
	secrets := []string{p.comment.ID, del.ID}
	for round, srv := range []*testServer{e, nil} {
		if round == 1 {
			srv = e.restart()
		}
		if leaks := strangerSees(t, srv, stranger, owner, "", secrets, "secret comment"); len(leaks) > 0 {
			t.Errorf("round %d: %s", round, strings.Join(leaks, "; "))
		}
		memberReads(t, srv, owner, "", "", secrets)
	}
}

// F27: a PR of a private repository pushed to GRASP-06 /prs/ by a member
// needs the same NIP-98 membership there as the repository: a stranger
// neither lists nor fetches it; the member does.
func TestPrivate_F27_PRsOfAPrivateRepositoryOnPRsArePrivate(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { offerPrivate(c); c.Grasp.Grasp06 = true })
	owner, stranger := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	p.work.commit("secret proposal")
	tip := mustGit(t, p.work.dir, "rev-parse", "HEAD")
	prs := e.prsURL(owner, "vault")
	pr := e.prEvent(owner, owner, "vault", tip, prs)
	p.conn.mustAccept(pr, "")
	if out, err := e.gitAs(owner, prs, p.work.dir, "push", "--porcelain", prs, tip+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("member's push to /prs/: %v\n%s", err, out)
	}
	e.eventually("the PR served to the member", 0, func() bool { return p.conn.served(pr.ID) })
	for who, k := range map[string]key{"anonymous": {}, "stranger": stranger} {
		if out, err := e.gitAs(k, prs, t.TempDir(), "ls-remote", prs); err == nil || strings.Contains(out, pr.ID) {
			t.Errorf("%s lists the private PR on /prs/: %v\n%s", who, err, out)
		}
		if out, err := e.gitAs(k, prs, t.TempDir(), "fetch", "-q", prs, tip); err == nil {
			t.Errorf("%s fetched the private PR's commit from /prs/:\n%s", who, out)
		}
	}
	if code, h, _ := httpGet(t, prs+"/info/refs?service=git-upload-pack"); code != http.StatusUnauthorized || h.Get("WWW-Authenticate") == "" {
		t.Errorf("/prs/ info/refs without a token: %d", code)
	}
	// positive control: the member lists it with its token
	out, err := e.gitAs(owner, prs, t.TempDir(), "ls-remote", prs)
	if err != nil || !strings.Contains(out, tip+"\trefs/nostr/"+pr.ID) {
		t.Fatalf("member's ls-remote of /prs/: %v\n%s", err, out)
	}
}

// F28: the issue and PR lists of a public repository's page show only
// public events: an issue that also tags a private repository is hidden
// there, as the relay hides it; a public issue is listed (control).
func TestPrivate_F28_PublicRepositoryPagesListNoPrivateIssue(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner, public := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	w := newWork(t)
	e.release(public, "open", w, w.commit("open"))
	openCoord := nip34.RepoRef{Pubkey: public.PK, Identifier: "open"}.String()
	cross := e.sign(owner, 1621, nostr.Tags{{"a", openCoord}, {"a", p.coordinate}, {"subject", "crossed secret title"}}, "")
	p.conn.mustAccept(cross, "")
	visible := e.sign(public, 1621, nostr.Tags{{"a", openCoord}, {"subject", "an open issue"}}, "")
	e.dial().mustAccept(visible, "")
	code, _, body := httpGet(t, e.cloneURL(public, "open")+"/issues")
	if code != http.StatusOK || !strings.Contains(body, "an open issue") {
		t.Fatalf("public repository's issues page: %d, the public issue missing", code)
	}
	if strings.Contains(body, "crossed secret title") {
		t.Fatal("the public repository's issues page lists an issue of a private repository")
	}
	if got := e.dial().query(nostr.Filter{IDs: []string{cross.ID}}); len(got) != 0 {
		t.Fatal("the relay serves the crossed issue to a stranger")
	}
}

// F32 (issue 24 part 11): on a server where nothing is private yet, the
// author of a kind-10318 list reads it back: a REQ naming kind 10318 from
// an unauthenticated connection is answered auth-required: with the
// challenge, and after AUTH the list is served; another key is refused.
func TestAbuse_F32_AuthorReadsBackItsKind10318WhereNothingIsPrivate(t *testing.T) {
	e := newEnv(t, nil)
	author, other := newKey(t), newKey(t)
	list := e.sign(author, nip34.KindPrivateGraspList, nil, "ciphertext")
	wc := e.dial()
	wc.send("EVENT", list)
	e.authRaw(wc, author)
	wc.mustAccept(list, "")

	cl := e.dial()
	f := nostr.Filter{Kinds: []int{nip34.KindPrivateGraspList}, Authors: []string{author.PK}}
	cl.send("REQ", "r1", f)
	var challenge, reason string
	for challenge == "" || reason == "" {
		m := cl.next(func(m []jsonMsg) bool {
			return label(m) == "AUTH" || (label(m) == "CLOSED" && str(m[1]) == "r1")
		})
		if label(m) == "AUTH" {
			challenge = str(m[1])
		} else {
			reason = str(m[2])
		}
	}
	if !strings.HasPrefix(reason, "auth-required:") {
		t.Fatalf("unauthenticated REQ for kind 10318: CLOSED %q, want auth-required: with the challenge", reason)
	}
	e.authWith(cl, author, challenge)
	if got := cl.query(f); len(got) != 1 || got[0].ID != list.ID {
		t.Fatalf("the author reads back %d lists, want its own", len(got))
	}
	oc := e.dial()
	oc.send("REQ", "x", f)
	e.authRaw(oc, other)
	if r := oc.closedReason("REQ", f); !strings.HasPrefix(r, "restricted:") {
		t.Fatalf("another key's REQ for the author's 10318: %q, want restricted:", r)
	}
}
