package server

import (
	"net/http"
	"strings"
	"testing"

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
	coord := nip34.RepoRef{Pubkey: a.pk, Identifier: "demo"}.String()
	cl := e.dial()
	public := e.sign(reporter, nip34.KindIssue, nostr.Tags{{"a", coord}, {"subject", "Public issue"}}, "public body")
	cl.mustAccept(public, "")
	cl.mustAccept(e.sign(reporter, nip34.KindComment, nostr.Tags{{"E", public.ID}, {"K", "1621"}, {"e", public.ID}, {"k", "1621"}}, "public comment"), "")
	// the private repository's owner is a reader of both
	crossover := e.sign(owner, nip34.KindIssue, nostr.Tags{{"a", coord}, {"a", p.coordinate}, {"subject", "Crossover issue"}}, "crossover body")
	p.conn.mustAccept(crossover, "")
	p.conn.mustAccept(e.sign(owner, nip34.KindComment, nostr.Tags{{"E", public.ID}, {"K", "1621"}, {"e", public.ID}, {"k", "1621"}, {"a", p.coordinate}}, "vault comment"), "")

	repo := e.base + "/" + a.npub + "/demo.git"
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
