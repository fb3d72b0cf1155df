package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/policy"
)

// reqFrames sends a REQ with filters and returns its events, or the CLOSED
// reason ("" when it reached EOSE).
func reqFrames(t *testing.T, c *client, sub string, filters ...nostr.Filter) (evts int, closed string) {
	t.Helper()
	parts := []any{"REQ", sub}
	for _, f := range filters {
		parts = append(parts, f)
	}
	frame, err := json.Marshal(parts)
	if err != nil {
		t.Fatal(err)
	}
	c.send(string(frame))
	c.readUntil(func(m []json.RawMessage) bool {
		switch {
		case label(m) == "EVENT" && str(m, 1) == sub:
			evts++
		case label(m) == "CLOSED" && str(m, 1) == sub:
			closed = str(m, 2)
			return true
		}
		return label(m) == "EOSE" && str(m, 1) == sub
	})
	if closed == "" {
		c.send(`["CLOSE","` + sub + `"]`)
	}
	return evts, closed
}

// A filter naming ids gets every match up to len(ids) (core/store), so the
// ids per filter and the filters per REQ are what bound such a query: both
// come from config, are advertised in NIP-11 limitation, and are enforced
// with a "blocked:" CLOSED one past the bound (issue 10 part 4).
func TestG10_IDsPerFilterAndFiltersPerREQBoundedAndAdvertised(t *testing.T) {
	tr := startRelay(t, Options{Limits: config.Limits{MaxFilterItems: 600, MaxFiltersPerReq: 3}})
	resp, body := get(t, http.MethodGet, tr.base+"/", nostrJSON)
	if resp.StatusCode != 200 {
		t.Fatalf("NIP-11: status %d", resp.StatusCode)
	}
	var doc struct {
		Limitation map[string]float64 `json:"limitation"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("NIP-11: %v", err)
	}
	if doc.Limitation["max_filter_items"] != 600 || doc.Limitation["max_filters"] != 3 {
		t.Fatalf("NIP-11 limitation = %v, want max_filter_items 600 and max_filters 3", doc.Limitation)
	}

	k := newKey(t)
	c := connect(t, tr.ws)
	stored := k.event(t, 1, 1_700_000_000, nil, "one")
	mustPublish(t, c, stored)
	idList := func(n int) []string {
		out := []string{stored.ID}
		for len(out) < n {
			out = append(out, fmt.Sprintf("%064x", len(out))) // well-formed, stored nowhere
		}
		return out
	}
	// Exactly the bound: served.
	if n, closed := reqFrames(t, c, "at", nostr.Filter{IDs: idList(600)}); closed != "" || n != 1 {
		t.Fatalf("600 ids: %d events, CLOSED %q; want the stored event and EOSE", n, closed)
	}
	// One past it: refused, saying the bound.
	if _, closed := reqFrames(t, c, "over", nostr.Filter{IDs: idList(601)}); !strings.HasPrefix(closed, "blocked:") || !strings.Contains(closed, "600") {
		t.Fatalf("601 ids: CLOSED %q, want blocked: naming 600", closed)
	}
	three := []nostr.Filter{{IDs: []string{stored.ID}}, {Kinds: []int{1}}, {Authors: []string{k.PK}}}
	if _, closed := reqFrames(t, c, "f3", three...); closed != "" {
		t.Fatalf("3 filters: CLOSED %q, want EOSE", closed)
	}
	if _, closed := reqFrames(t, c, "f4", append(three, nostr.Filter{Kinds: []int{7}})...); !strings.HasPrefix(closed, "blocked:") || !strings.Contains(closed, "3") {
		t.Fatalf("4 filters: CLOSED %q, want blocked: naming 3", closed)
	}
}

// rawEventFrame is an EVENT frame written by hand, so that invalid UTF-8 in
// evt reaches the relay as raw bytes (encoding/json would replace it with
// U+FFFD). The test's strings need no escaping.
func rawEventFrame(evt *nostr.Event) string {
	var tags []string
	for _, tag := range evt.Tags {
		tags = append(tags, `["`+strings.Join(tag, `","`)+`"]`)
	}
	return fmt.Sprintf(`["EVENT",{"id":"%s","pubkey":"%s","created_at":%d,"kind":%d,"tags":[%s],"content":"%s","sig":"%s"}]`,
		evt.ID, evt.PubKey, evt.CreatedAt, evt.Kind, strings.Join(tags, ","), evt.Content, evt.Sig)
}

// Audit F15: an event signed over invalid UTF-8 was accepted and then served
// with U+FFFD, no longer matching its signature. It is refused with
// "invalid:", in content and in any tag; valid multi-byte text is accepted.
func TestAbuse_F15_InvalidUTF8Refused(t *testing.T) {
	tr := startRelay(t, Options{})
	k := newKey(t)
	c := connect(t, tr.ws)
	okOf := func(evt *nostr.Event) (bool, string) {
		c.send(rawEventFrame(evt))
		seen := c.readUntil(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == evt.ID })
		m := seen[len(seen)-1]
		return string(m[2]) == "true", str(m, 3)
	}
	cases := map[string]*nostr.Event{
		"content":         k.event(t, 1, 1_700_000_001, nil, "bad \xff\xfe byte"),
		"tag value":       k.event(t, 1, 1_700_000_002, nostr.Tags{{"t", "x\xc3"}}, "fine"),
		"tag name":        k.event(t, 1, 1_700_000_003, nostr.Tags{{"\xed\xa0\x80", "v"}}, "fine"), // a UTF-8-encoded surrogate
		"later tag value": k.event(t, 1, 1_700_000_004, nostr.Tags{{"t", "ok"}, {"e", "a", "\x80"}}, "fine"),
	}
	for name, evt := range cases {
		ok, msg := okOf(evt)
		if ok || !strings.HasPrefix(msg, "invalid:") || !strings.Contains(msg, "UTF-8") {
			t.Errorf("%s: OK %v %q, want false \"invalid: ... UTF-8\"", name, ok, msg)
		}
		if got := query(t, c, nostr.Filter{IDs: []string{evt.ID}}); len(got) != 0 {
			t.Errorf("%s: the refused event is served", name)
		}
	}
	// Control: valid multi-byte UTF-8 in content and tags, sent the same way.
	good := k.event(t, 1, 1_700_000_005, nostr.Tags{{"t", "héllo ✓ 𝄞"}}, "grüße ✓ 𝄞")
	if ok, msg := okOf(good); !ok {
		t.Fatalf("valid UTF-8: OK false %q", msg)
	}
	got := query(t, c, nostr.Filter{IDs: []string{good.ID}})
	if len(got) != 1 || got[0].Content != good.Content || !got[0].CheckID() {
		t.Fatalf("valid UTF-8 event not served intact: %v", got)
	}
}

// authAs answers the connection's NIP-42 challenge as k and waits for OK.
func authAs(t *testing.T, c *client, relayURL, challenge string, k key) {
	t.Helper()
	evt := k.event(t, 22242, int64(nostr.Now()), nostr.Tags{{"relay", relayURL}, {"challenge", challenge}}, "")
	frame, _ := json.Marshal([]any{"AUTH", evt})
	c.send(string(frame))
	seen := c.readUntil(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m, 1) == evt.ID })
	if m := seen[len(seen)-1]; string(m[2]) != "true" {
		t.Fatalf("AUTH as %s refused: %s", k.PK[:8], str(m, 3))
	}
}

// NIP-70 (issue 10 part 6): an event with a ["-"] tag is accepted only from
// a connection authenticated (NIP-42) as its author. Unauthenticated, and
// authenticated as another key, the client is told "auth-required:".
func TestNIP70_ProtectedEventOnlyFromItsAuthenticatedAuthor(t *testing.T) {
	tr := startRelay(t, Options{})
	author, other := newKey(t), newKey(t)
	c := connect(t, tr.ws)
	protected := author.event(t, 1, 1_700_000_010, nostr.Tags{{"-"}}, "protected")

	ok, msg := publishOK(t, c, protected)
	if ok || !strings.HasPrefix(msg, "auth-required:") {
		t.Fatalf("unauthenticated: OK %v %q, want false auth-required:", ok, msg)
	}
	seen := c.readUntil(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	challenge := str(seen[len(seen)-1], 1)

	authAs(t, c, tr.srv.RelayURL(), challenge, other)
	ok, msg = publishOK(t, c, protected)
	if ok || !strings.HasPrefix(msg, "auth-required:") {
		t.Fatalf("authenticated as another key: OK %v %q, want false auth-required: (not restricted:/blocked:)", ok, msg)
	}
	// The other key's own protected event is accepted on this connection.
	own := other.event(t, 1, 1_700_000_011, nostr.Tags{{"-"}}, "mine")
	if ok, msg := publishOK(t, c, own); !ok {
		t.Fatalf("authenticated author's own protected event: OK false %q", msg)
	}
	if got := query(t, c, nostr.Filter{IDs: []string{protected.ID}}); len(got) != 0 {
		t.Fatal("a refused protected event is served")
	}

	authAs(t, c, tr.srv.RelayURL(), challenge, author)
	if ok, msg := publishOK(t, c, protected); !ok {
		t.Fatalf("authenticated as the author: OK false %q", msg)
	}
	if got := query(t, c, nostr.Filter{IDs: []string{protected.ID}}); len(got) != 1 {
		t.Fatal("the accepted protected event is not served")
	}
	// Control: an unprotected event needs no authentication.
	plain := author.event(t, 1, 1_700_000_012, nil, "plain")
	if ok, msg := publishOK(t, connect(t, tr.ws), plain); !ok {
		t.Fatalf("unprotected event without AUTH: OK false %q", msg)
	}
}

// Audit F18c: a panic in the write path (here the acceptance pipeline) is
// answered "error:" for a client and for a sync peer alike; the relay goes
// on storing the next event.
func TestAbuse_F18c_PanicInTheWritePathAnsweredError(t *testing.T) {
	p := &fakePipeline{decide: func(evt *nostr.Event) policy.Decision {
		if evt.Content == "boom" {
			panic("injected pipeline panic")
		}
		return policy.Decision{Outcome: policy.Store}
	}}
	tr := startRelay(t, Options{Pipeline: p})
	k := newKey(t)
	c := connect(t, tr.ws)
	boom := k.event(t, 1, 1_700_000_020, nil, "boom")
	if ok, msg := publishOK(t, c, boom); ok || !strings.HasPrefix(msg, "error:") {
		t.Fatalf("client EVENT whose pipeline panics: OK %v %q, want false error:", ok, msg)
	}
	boom2 := k.event(t, 1, 1_700_000_021, nil, "boom")
	if ok, msg := tr.srv.Ingest(context.Background(), boom2, policy.Meta{Source: policy.SourceSync}); ok || !strings.HasPrefix(msg, "error:") {
		t.Fatalf("synced event whose pipeline panics: %v %q, want false error:", ok, msg)
	}
	// Control: the same connection, the next event is stored and served.
	fine := k.event(t, 1, 1_700_000_022, nil, "fine")
	mustPublish(t, c, fine)
	if got := query(t, c, nostr.Filter{Authors: []string{k.PK}}); len(got) != 1 || got[0].ID != fine.ID {
		t.Fatalf("served %v, want only the stored event", ids(got))
	}
}

// NIP-05 (issue 10 part 6): with relay.pubkey set, /.well-known/nostr.json
// names it as "_" with CORS; without it the path is a 404. Under a base
// path the document is answered both under the path and at the host's root
// (where NIP-05 looks it up, if the proxy forwards that path), and nothing
// else at the root is ours.
func TestNIP05_RelayKeyAtWellKnown(t *testing.T) {
	pk := strings.Repeat("cd", 32)
	check := func(t *testing.T, url string) {
		t.Helper()
		resp, body := get(t, http.MethodGet, url+"?name=_", nil)
		var doc struct {
			Names map[string]string `json:"names"`
		}
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &doc) != nil || doc.Names["_"] != pk || len(doc.Names) != 1 {
			t.Fatalf("GET %s: %d %q, want {\"names\":{\"_\":%q}}", url, resp.StatusCode, body, pk)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s: Content-Type %q", url, ct)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("GET %s: Access-Control-Allow-Origin %q, want *", url, got)
		}
		resp, _ = get(t, http.MethodOptions, url, map[string]string{"Origin": "https://client.example", "Access-Control-Request-Method": "GET"})
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("preflight %s: %d, CORS %q", url, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	nip05Listed := func(t *testing.T, tr *testRelay) bool {
		_, body := get(t, http.MethodGet, tr.base+"/", nostrJSON)
		if tr.srv.svc.Path != "" {
			_, body = get(t, http.MethodGet, tr.base+tr.srv.svc.Path, nostrJSON)
		}
		var doc struct {
			NIPs []int `json:"supported_nips"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("NIP-11: %v", err)
		}
		return slices.Contains(doc.NIPs, 5)
	}
	t.Run("root", func(t *testing.T) {
		tr := startRelay(t, Options{PubkeyHex: pk})
		check(t, tr.base+"/.well-known/nostr.json")
		if !nip05Listed(t, tr) {
			t.Error("NIP-11 supported_nips lacks 5 with relay.pubkey set")
		}
	})
	t.Run("base path", func(t *testing.T) {
		tr := startRelay(t, Options{PublicURL: listenBase + "/git", PubkeyHex: pk})
		check(t, tr.base+"/git/.well-known/nostr.json")
		check(t, tr.base+"/.well-known/nostr.json")
		for _, p := range []string{"/.well-known/other.json", "/.well-known/nostr.jsonx", "/"} {
			if resp, _ := get(t, http.MethodGet, tr.base+p, nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s at the root = %d, want 404 (the root is not ours)", p, resp.StatusCode)
			}
		}
	})
	t.Run("no relay key", func(t *testing.T) {
		tr := startRelay(t, Options{PublicURL: listenBase + "/git"})
		if nip05Listed(t, tr) {
			t.Error("NIP-11 supported_nips lists 5 without relay.pubkey")
		}
		for _, p := range []string{"/.well-known/nostr.json", "/git/.well-known/nostr.json"} {
			if resp, body := get(t, http.MethodGet, tr.base+p, nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s without relay.pubkey = %d %q, want 404", p, resp.StatusCode, body)
			}
		}
	})
}

// corsList splits an Access-Control-Allow-* value into lower-cased items.
func corsList(v string) map[string]bool {
	out := map[string]bool{}
	for _, s := range strings.Split(v, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out[s] = true
		}
	}
	return out
}

// Audit F18a, issue 10 part 4 and issue 25 part 6: the CORS rule. Every
// preflight, receive-pack's included, allows GET and POST and the full
// header set browser git clients send (Git-Protocol, X-Git-Request-Id ...);
// git-receive-pack keeps Access-Control-Allow-Origin "*" because gitworkshop
// pushes from the browser; no response allows credentials. (F18a's first fix
// narrowed receive-pack to POST and four headers; issue 25 restores the
// spec's "all responses" rule.)
func TestAbuse_F18a_CORSRuleForGitAndReceivePack(t *testing.T) {
	tr := startRelay(t, Options{})
	tr.srv.HandleGit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	const repo = "/npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq8yaf0w/r.git"
	preflight := func(path, method, headers string) *http.Response {
		resp, _ := get(t, http.MethodOptions, tr.base+path, map[string]string{
			"Origin": "https://gitworkshop.dev", "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": headers})
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("preflight %s: %d, origin %q", path, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
		if resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("preflight %s allows credentials", path)
		}
		return resp
	}
	allows := func(resp *http.Response, headers ...string) bool {
		got := corsList(resp.Header.Get("Access-Control-Allow-Headers"))
		for _, h := range headers {
			if !got[strings.ToLower(h)] {
				return false
			}
		}
		return true
	}
	// Fetches, clones and everything else: X-Git-Request-Id with the rest.
	for _, p := range []string{repo + "/info/refs", repo + "/git-upload-pack", "/"} {
		resp := preflight(p, "POST", "x-git-request-id, git-protocol, content-type")
		if !allows(resp, "X-Git-Request-Id", "Git-Protocol", "Content-Type", "Content-Encoding", "Authorization") {
			t.Errorf("preflight %s allows %q, want X-Git-Request-Id and the git headers", p, resp.Header.Get("Access-Control-Allow-Headers"))
		}
	}
	// receive-pack: the same rule, Git-Protocol included (issue 25 part 6).
	for _, p := range []string{repo + "/git-receive-pack", "/prs/npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq8yaf0w/r.git/git-receive-pack"} {
		resp := preflight(p, "POST", "content-type, git-protocol")
		assertCORS(t, "receive-pack preflight "+p, resp)
		if got := corsList(resp.Header.Get("Access-Control-Allow-Methods")); !got["post"] || !got["get"] {
			t.Errorf("receive-pack preflight %s allows methods %v, want GET and POST", p, got)
		}
		// gitworkshop's POST itself is readable by the page.
		req, _ := http.NewRequest(http.MethodPost, tr.base+p, strings.NewReader("0000"))
		req.Header.Set("Origin", "https://gitworkshop.dev")
		req.Header.Set("Content-Type", "application/x-git-receive-pack-request")
		req.Header.Set("Accept", "application/x-git-receive-pack-result")
		post, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		post.Body.Close()
		assertCORS(t, "POST "+p, post)
		if post.Header.Get("Access-Control-Allow-Origin") != "*" || post.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("POST %s: origin %q, credentials %q; want * and none", p, post.Header.Get("Access-Control-Allow-Origin"), post.Header.Get("Access-Control-Allow-Credentials"))
		}
	}
	// The receive-pack advertisement (a GET with Accept, not preflighted)
	// carries the general rule.
	resp, _ := get(t, http.MethodGet, tr.base+repo+"/info/refs?service=git-receive-pack", map[string]string{"Accept": "application/x-git-receive-pack-advertisement"})
	assertCORS(t, "receive-pack advertisement", resp)
}
