package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// TestG08_DiscussionPagesAskTheReaderCheck: the server wires the pages to
// GRASP-08's reader check. An issue of a public repository that also names
// a private one has no page, is not listed and not counted; a comment on a
// public issue that names the private repository is not shown on its
// page; the public issue and its public comment are (issue 26 part 2).
func TestG08_DiscussionPagesAskTheReaderCheck(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner, a, reporter := newKey(t), newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	w := newWork(t)
	e.release(a, "demo", w, w.commit("first"))
	coord := nip34.RepoRef{Pubkey: a.PK, Identifier: "demo"}.String()
	cl := e.dial()
	public := e.sign(reporter, nip34.KindIssue, nostr.Tags{{"a", coord}, {"subject", "Public issue"}}, "public body")
	cl.mustAccept(public, "")
	cl.mustAccept(e.sign(reporter, nip34.KindComment, nostr.Tags{{"E", public.ID}, {"K", "1621"}, {"e", public.ID}, {"k", "1621"}}, "public comment"), "")
	// the private repository's owner is a reader of both
	crossover := e.sign(owner, nip34.KindIssue, nostr.Tags{{"a", coord}, {"a", p.coordinate}, {"subject", "Crossover issue"}}, "crossover body")
	p.conn.mustAccept(crossover, "")
	p.conn.mustAccept(e.sign(owner, nip34.KindComment, nostr.Tags{{"E", public.ID}, {"K", "1621"}, {"e", public.ID}, {"k", "1621"}, {"a", p.coordinate}}, "vault comment"), "")

	repo := e.base + "/" + a.Npub + "/demo.git"
	status, _, body := httpGet(t, repo+"/issues")
	if status != http.StatusOK || !strings.Contains(body, "Public issue") || !strings.Contains(body, `Issues <span class="count">1</span>`) {
		t.Fatalf("issues list: %d\n%.3000s", status, body)
	}
	if strings.Contains(body, "Crossover issue") {
		t.Error("the issues list names an issue of the private repository")
	}
	if status, _, body := httpGet(t, repo+"/issues/"+crossover.ID); status != http.StatusNotFound || strings.Contains(body, "crossover body") {
		t.Errorf("the private issue's page: %d", status)
	}
	status, _, body = httpGet(t, repo+"/issues/"+public.ID)
	if status != http.StatusOK || !strings.Contains(body, "public body") || !strings.Contains(body, "public comment") {
		t.Fatalf("public issue page: %d\n%.3000s", status, body)
	}
	if strings.Contains(body, "vault comment") {
		t.Error("the public issue's page shows a comment of the private repository")
	}
}

// TestPages_OnThisServerFromTheRealParts: the "On this server" page reads
// the real parts (issue 26 part 5): a repository in sync; a newer state
// held for its commit, listed as waiting in purgatory while the served refs
// still match the stored state; a push matching no signed state, refused
// and shown by its kind (not its refs or commits); then the state's push,
// and the page is in sync with the new state.
func TestPages_OnThisServerFromTheRealParts(t *testing.T) {
	e := newEnv(t, nil)
	a := newKey(t)
	w := newWork(t)
	e.release(a, "demo", w, w.commit("first"))
	page := e.base + "/" + a.Npub + "/demo.git/status"
	get := func() string {
		t.Helper()
		status, _, body := httpGet(t, page)
		if status != http.StatusOK {
			t.Fatalf("status page: %d\n%.2000s", status, body)
		}
		return body
	}
	if body := get(); !strings.Contains(body, `st-open">in sync</span>`) || !strings.Contains(body, "Nothing waits for this repository") {
		t.Fatalf("a released repository is not shown in sync:\n%.4000s", body)
	}

	two := w.commit("second")
	e.clk.Advance(time.Second) // a newer state than the released one
	s2 := e.state(a, "demo", map[string]string{"refs/heads/main": two}, "refs/heads/main")
	e.dial().mustAccept(s2, purg)
	body := get()
	for _, want := range []string{`st-open">in sync</span>`, "Newer states wait in purgatory", "state <code>" + s2.ID[:12],
		"1 event waits for this repository", "1 object</td>"} {
		if !strings.Contains(body, want) {
			t.Errorf("with a held state the page lacks %q", want)
		}
	}

	three := w.commit("third")
	if out, err := w.push(e.cloneURL(a, "demo"), three+":refs/heads/main"); err == nil {
		t.Fatalf("a push matching no state was accepted:\n%s", out)
	}
	body = get()
	if !strings.Contains(body, "the pushed branches and tags were not those of the latest signed state (1 ref)") {
		t.Errorf("the refused push is not shown:\n%.6000s", body[strings.Index(body, `id="refusals"`):])
	}
	if strings.Contains(body, three) || strings.Contains(body, three[:12]) {
		t.Error("the page names the refused push's commit")
	}

	if out, err := w.push(e.cloneURL(a, "demo"), two+":refs/heads/main"); err != nil {
		t.Fatalf("the state's push: %v\n%s", err, out)
	}
	e.eventually("the held state released", 0, func() bool { return e.dial().served(s2.ID) })
	body = get()
	if !strings.Contains(body, `st-open">in sync</span>`) || strings.Contains(body, "Newer states wait") || !strings.Contains(body, "Nothing waits") {
		t.Errorf("after the state's push the page is not in sync with it:\n%.4000s", body)
	}
}
