package server_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
)

// ---- GRASP-08 helpers --------------------------------------------------

// nip98 is a NIP-98 token for the repository URL u: kind 27235 with u and
// method GET, dated by the server's clock, as the Authorization header.
func (e *testServer) nip98(k key, u string) string {
	e.t.Helper()
	evt := e.sign(k, 27235, nostr.Tags{{"u", u}, {"method", "GET"}}, "")
	b, _ := json.Marshal(evt)
	return "Nostr " + base64.StdEncoding.EncodeToString(b)
}

// gitAs runs git in dir with k's NIP-98 token for the repository u as an
// extra header (k zero: no header).
func (e *testServer) gitAs(k key, u, dir string, args ...string) (string, error) {
	e.t.Helper()
	if k.SK != "" {
		args = append([]string{"-c", "http.extraHeader=Authorization: " + e.nip98(k, u)}, args...)
	}
	return gitRun(e.t, dir, args...)
}

// authed is a connection authenticated (NIP-42) as k: the AUTH event is
// go-nostr's client-side construction (nip42.CreateUnsignedAuthEvent) over
// the challenge the relay sent on connect (it does while anything is
// private). go-nostr's Relay itself is not used: its connection teardown
// races its own goroutines under -race.
func (e *testServer) authed(k key) *client {
	e.t.Helper()
	cl := e.dial()
	e.authRaw(cl, k)
	return cl
}

// authRaw authenticates cl as k with the next challenge it receives.
func (e *testServer) authRaw(cl *client, k key) {
	e.t.Helper()
	m := cl.next(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	evt := nip42.CreateUnsignedAuthEvent(str(m[1]), k.PK, e.ws)
	if err := evt.Sign(k.SK); err != nil {
		e.t.Fatal(err)
	}
	cl.send("AUTH", evt)
	ok := cl.next(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m[1]) == evt.ID })
	var b bool
	json.Unmarshal(ok[2], &b)
	if !b {
		e.t.Fatalf("AUTH refused: %s", ok[3])
	}
}

// closedReason runs a REQ or COUNT (verb) and returns the CLOSED reason, or
// "" when it was answered (EOSE or COUNT).
func (cl *client) closedReason(verb string, f nostr.Filter) string {
	cl.t.Helper()
	subSeq++
	id := "c" + strings.Repeat("x", subSeq%7) + string(rune('a'+subSeq%26))
	cl.send(verb, id, f)
	m := cl.next(func(m []json.RawMessage) bool {
		l := label(m)
		return (l == "EOSE" || l == "CLOSED" || l == "COUNT") && str(m[1]) == id
	})
	cl.send("CLOSE", id)
	if label(m) == "CLOSED" {
		return str(m[2])
	}
	return ""
}

// count runs COUNT and returns the number.
func (cl *client) count(f nostr.Filter) int {
	cl.t.Helper()
	subSeq++
	id := "n" + string(rune('a'+subSeq%26))
	cl.send("COUNT", id, f)
	m := cl.next(func(m []json.RawMessage) bool { return label(m) == "COUNT" && str(m[1]) == id })
	var c struct {
		Count int `json:"count"`
	}
	json.Unmarshal(m[2], &c)
	return c.Count
}

// negOpen opens a NIP-77 session from an empty set and returns the
// server's first answer (NEG-MSG or NEG-ERR) and its payload.
func (cl *client) negOpen(f nostr.Filter) (string, string) {
	cl.t.Helper()
	vec := vector.New()
	vec.Seal()
	neg := negentropy.New(vec, 60_000)
	subSeq++
	id := "neg" + string(rune('a'+subSeq%26))
	cl.send("NEG-OPEN", id, f, neg.Start())
	m := cl.next(func(m []json.RawMessage) bool {
		return (label(m) == "NEG-MSG" || label(m) == "NEG-ERR") && str(m[1]) == id
	})
	cl.send("NEG-CLOSE", id)
	return label(m), str(m[2])
}

func httpGet(t *testing.T, u string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// privateRepo is a private repository on e, released (stored, with git
// data) through the member's authenticated connection and a NIP-98 push,
// plus an issue and a comment on it.
type privateRepo struct {
	owner              key
	d                  string
	ann, state         *nostr.Event
	issue, comment     *nostr.Event
	tip                string
	work               *work
	clone              string
	conn               *client
	privateIDs         []string
	coordinate, npubID string
}

func (e *testServer) releasePrivate(owner key, d string) *privateRepo {
	e.t.Helper()
	p := &privateRepo{owner: owner, d: d, work: newWork(e.t), clone: e.cloneURL(owner, d)}
	p.tip = p.work.commit("secret v1")
	p.ann = e.announcement(owner, d, nostr.Tag{"private", "true"}, nostr.Tag{"name", "topsecret-name"})
	// before anything is private the relay sends no challenge on connect;
	// a private announcement is private data, so publishing it asks for
	// AUTH (the refusal brings the challenge) and the author retries
	p.conn = e.dial()
	p.conn.send("EVENT", p.ann)
	e.authRaw(p.conn, owner)
	p.conn.mustAccept(p.ann, purg)
	p.state = e.state(owner, d, map[string]string{"refs/heads/main": p.tip}, "refs/heads/main")
	p.conn.mustAccept(p.state, purg)
	if out, err := e.gitAs(owner, p.clone, p.work.dir, "push", "--porcelain", p.clone, "main:refs/heads/main"); err != nil {
		e.t.Fatalf("member's NIP-98 push: %v\n%s", err, out)
	}
	e.eventually("private announcement released", 0, func() bool { return p.conn.served(p.ann.ID) })
	p.coordinate = nip34.RepoRef{Pubkey: owner.PK, Identifier: d}.String()
	p.issue = e.sign(owner, 1621, nostr.Tags{{"a", p.coordinate}, {"subject", "secret issue"}}, "secret issue body")
	p.conn.mustAccept(p.issue, "")
	p.comment = e.sign(owner, 1111, nostr.Tags{{"E", p.issue.ID}, {"K", "1621"}, {"P", owner.PK}, {"e", p.issue.ID}, {"k", "1621"}, {"p", owner.PK}}, "secret comment")
	p.conn.mustAccept(p.comment, "")
	p.privateIDs = []string{p.ann.ID, p.state.ID, p.issue.ID, p.comment.ID}
	p.npubID = owner.Npub + "/" + d
	return p
}

var privateKinds = []int{30617, 30618, 1621, 1111, 1630}

// offerPrivate turns per-repository privacy on (grasp.private_repositories).
func offerPrivate(c *config.Config) { c.Grasp.PrivateRepositories = true }

// ---- tests ---------------------------------------------------------------

// G08-3: a repository whose announcement carries ["private","true"] is
// served to its maintainers only. The member (positive control) reads it
// through go-nostr's NIP-42 client and clones it with git and a NIP-98
// extraHeader; the same clone without the header, or with a non-member's
// token, fails; a push needs the token and still the state on top.
func TestG08_3_PrivateRepoNIP42AndNIP98(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner, stranger := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")

	// positive control: the member reads every private event
	got := p.conn.query(nostr.Filter{Kinds: privateKinds})
	if ids := idSet(got); !ids[p.ann.ID] || !ids[p.state.ID] || !ids[p.issue.ID] || !ids[p.comment.ID] {
		t.Fatalf("member sees %d events, missing some of %v", len(got), p.privateIDs)
	}
	// clone with the member's token: the real git binary, extraHeader
	dst := t.TempDir()
	if out, err := e.gitAs(owner, p.clone, dst, "clone", "-q", p.clone, "c"); err != nil {
		t.Fatalf("member clone: %v\n%s", err, out)
	}
	if head := mustGit(t, dst+"/c", "rev-parse", "HEAD"); head != p.tip {
		t.Fatalf("cloned HEAD %s, want %s", head, p.tip)
	}
	// without a token, and with a stranger's: refused
	if out, err := e.gitAs(key{}, p.clone, t.TempDir(), "clone", "-q", p.clone, "c"); err == nil {
		t.Fatalf("anonymous clone of a private repository succeeded:\n%s", out)
	}
	if out, err := e.gitAs(stranger, p.clone, t.TempDir(), "clone", "-q", p.clone, "c"); err == nil {
		t.Fatalf("non-member clone of a private repository succeeded:\n%s", out)
	}
	code, h, body := httpGet(t, p.clone+"/info/refs?service=git-upload-pack")
	if code != 401 || h.Get("WWW-Authenticate") != `Nostr method="GET"` || body != "" {
		t.Fatalf("info/refs without a token: %d %q %q, want an empty 401 with WWW-Authenticate", code, h.Get("WWW-Authenticate"), body)
	}
	if code, _, _ := httpGet(t, p.clone+"/info/refs?service=git-upload-pack", "Authorization", e.nip98(stranger, p.clone)); code != 403 {
		t.Fatalf("info/refs with a non-member's token: %d, want 403", code)
	}
	// tokens bound to another URL, another method, or a minute and more
	// away are refused; the member's good token works (and is reusable)
	bad := []string{
		e.nip98(owner, e.cloneURL(owner, "other")),
		func() string {
			evt := e.sign(owner, 27235, nostr.Tags{{"u", p.clone}, {"method", "POST"}}, "")
			b, _ := json.Marshal(evt)
			return "Nostr " + base64.StdEncoding.EncodeToString(b)
		}(),
		func() string {
			evt := &nostr.Event{Kind: 27235, Tags: nostr.Tags{{"u", p.clone}, {"method", "GET"}}, CreatedAt: nostr.Timestamp(e.clk.Now().Unix() - 61)}
			evt.Sign(owner.SK)
			b, _ := json.Marshal(evt)
			return "Nostr " + base64.StdEncoding.EncodeToString(b)
		}(),
	}
	for i, tok := range bad {
		if code, _, _ := httpGet(t, p.clone+"/info/refs?service=git-upload-pack", "Authorization", tok); code != 401 {
			t.Errorf("bad token %d: %d, want 401", i, code)
		}
	}
	good := e.nip98(owner, p.clone)
	for i := 0; i < 2; i++ {
		if code, _, _ := httpGet(t, p.clone+"/info/refs?service=git-upload-pack", "Authorization", good); code != 200 {
			t.Fatalf("member token, use %d: %d, want 200", i+1, code)
		}
	}
	// a push with the member's token but no matching state is still
	// refused by state authorisation
	p.work.commit("secret v2")
	out, err := e.gitAs(owner, p.clone, p.work.dir, "push", "--porcelain", p.clone, "main:refs/heads/main")
	if err == nil || !strings.Contains(out, "authorisation failed") {
		t.Fatalf("push without a state: err %v\n%s", err, out)
	}
}

// G08-4: nothing of a private repository reaches a non-member through any
// read path, unauthenticated or authenticated: REQ by kind, author, #a, #d,
// #e, ids and search, COUNT, NEG-OPEN, a live subscription open while the
// member publishes, git info/refs and clone, the landing page, the
// repository page, NIP-11 and the metrics. Public events stay visible
// (positive control), and the member sees it all.
func TestG08_4_NoReadPathLeaksAPrivateRepository(t *testing.T) {
	e := newEnv(t, offerPrivate)
	owner, stranger := newKey(t), newKey(t)
	p := e.releasePrivate(owner, "vault")
	// a public event, visible to all: the positive control of filtering
	pub := e.sign(stranger, nip34.KindGraspList, nostr.Tags{{"g", e.ws}}, "")
	e.dial().mustAccept(pub, "")

	anon := e.dial()
	anon.next(func(m []json.RawMessage) bool { return label(m) == "AUTH" }) // challenge on connect
	other := e.dial()
	e.authRaw(other, stranger)
	member := e.dial()
	e.authRaw(member, owner)

	secret := func(evs []*nostr.Event) []string {
		var out []string
		ids := idSet(evs)
		for _, id := range p.privateIDs {
			if ids[id] {
				out = append(out, id)
			}
		}
		return out
	}
	// the read paths that answer silently filtered
	silent := map[string]nostr.Filter{
		"kinds":   {Kinds: privateKinds},
		"all":     {},
		"author":  {Authors: []string{owner.PK}},
		"#d":      {Tags: nostr.TagMap{"d": {p.d}}},
		"#p":      {Tags: nostr.TagMap{"p": {owner.PK}}},
		"kinds+d": {Kinds: []int{30617, 30618}, Tags: nostr.TagMap{"d": {p.d}}},
	}
	// the read paths that name the repository outright: refused
	named := map[string]nostr.Filter{
		"#a":        {Tags: nostr.TagMap{"a": {p.coordinate}}},
		"#A":        {Tags: nostr.TagMap{"A": {p.coordinate}}},
		"author+#d": {Authors: []string{owner.PK}, Tags: nostr.TagMap{"d": {p.d}}},
		"#e":        {Tags: nostr.TagMap{"e": {p.issue.ID}}},
		"#E":        {Tags: nostr.TagMap{"E": {p.issue.ID}}},
		"ids":       {IDs: p.privateIDs},
	}
	for who, cl := range map[string]*client{"unauthenticated": anon, "non-member": other} {
		prefix := "auth-required:"
		if cl == other {
			prefix = "restricted:"
		}
		for name, f := range silent {
			if got := secret(cl.query(f)); len(got) > 0 {
				t.Errorf("%s REQ %s leaked %v", who, name, got)
			}
			if n := cl.count(f); n != len(public(f, pub)) {
				t.Errorf("%s COUNT %s = %d, want %d (public events only)", who, name, n, len(public(f, pub)))
			}
			l, msg := cl.negOpen(f)
			for _, id := range p.privateIDs {
				if strings.Contains(msg, id) {
					t.Errorf("%s NEG-OPEN %s leaked id %s", who, name, id)
				}
			}
			if l != "NEG-MSG" {
				t.Errorf("%s NEG-OPEN %s: %s %s", who, name, l, msg)
			}
		}
		for name, f := range named {
			for _, verb := range []string{"REQ", "COUNT"} {
				if r := cl.closedReason(verb, f); !strings.HasPrefix(r, prefix) {
					t.Errorf("%s %s %s: CLOSED %q, want %s", who, verb, name, r, prefix)
				}
			}
			if l, msg := cl.negOpen(f); l != "NEG-ERR" || !strings.HasPrefix(msg, prefix) {
				t.Errorf("%s NEG-OPEN %s: %s %q, want NEG-ERR %s", who, name, l, msg, prefix)
			}
		}
		if r := cl.closedReason("REQ", nostr.Filter{Search: p.d}); !strings.HasPrefix(r, "blocked:") {
			t.Errorf("%s search: %q", who, r)
		}
		// positive control: the public event is there for everyone
		if got := cl.query(nostr.Filter{Kinds: []int{nip34.KindGraspList}}); len(got) != 1 {
			t.Errorf("%s does not see the public event: %d", who, len(got))
		}
	}
	// positive control: the member sees every private event on every path
	for name, f := range silent {
		if len(f.IDs) == 0 && len(f.Tags) == 0 && len(f.Authors) == 0 && len(f.Kinds) == 0 {
			continue
		}
		if got := secret(member.query(f)); len(got) == 0 {
			t.Errorf("member REQ %s sees nothing private", name)
		}
	}
	for name, f := range named {
		// Only filters a private event matches (NIP-01: "#A" names
		// uppercase A tags, which none of them carries; the refusals above
		// still cover it).
		if !slices.ContainsFunc([]*nostr.Event{p.ann, p.state, p.issue, p.comment}, f.Matches) {
			continue
		}
		if got := secret(member.query(f)); len(got) == 0 {
			t.Errorf("member REQ %s sees nothing private", name)
		}
	}
	if l, msg := member.negOpen(nostr.Filter{Kinds: privateKinds}); l != "NEG-MSG" || !strings.Contains(msg, p.issue.ID) {
		t.Errorf("member NEG-OPEN: %s, issue id not in %q", l, msg)
	}
	if n := member.count(nostr.Filter{Kinds: privateKinds}); n != 4 {
		t.Errorf("member COUNT = %d, want 4", n)
	}

	// live: subscriptions open while the member publishes; the public
	// marker sent after proves the private issue was skipped
	for _, cl := range []*client{anon, other, member} {
		cl.send("REQ", "live", nostr.Filter{Kinds: []int{1621, nip34.KindGraspList}, Limit: 0, LimitZero: true})
		cl.next(func(m []json.RawMessage) bool { return label(m) == "EOSE" && str(m[1]) == "live" })
	}
	issue2 := e.sign(owner, 1621, nostr.Tags{{"a", p.coordinate}, {"subject", "second secret"}}, "second")
	p.conn.mustAccept(issue2, "")
	marker := e.sign(newKey(t), nip34.KindGraspList, nostr.Tags{{"g", e.ws}}, "")
	e.dial().mustAccept(marker, "")
	for who, cl := range map[string]*client{"unauthenticated": anon, "non-member": other} {
		m := cl.next(func(m []json.RawMessage) bool { return label(m) == "EVENT" && str(m[1]) == "live" })
		var evt nostr.Event
		json.Unmarshal(m[2], &evt)
		if evt.ID != marker.ID {
			t.Errorf("%s live subscription got %s (%d), want only the public marker", who, evt.ID, evt.Kind)
		}
	}
	m := member.next(func(m []json.RawMessage) bool { return label(m) == "EVENT" && str(m[1]) == "live" })
	var first nostr.Event
	json.Unmarshal(m[2], &first)
	if first.ID != issue2.ID {
		t.Errorf("member's live subscription got %s first, want the private issue %s", first.ID, issue2.ID)
	}

	// EVENT into the private repository: refused to non-members
	intrude := e.sign(stranger, 1621, nostr.Tags{{"a", p.coordinate}, {"subject", "hi"}}, "hi")
	anon.mustReject(intrude, "auth-required:")
	other.mustReject(intrude, "restricted:")

	// git and HTTP
	if code, _, _ := httpGet(t, p.clone+"/info/refs?service=git-upload-pack"); code != 401 {
		t.Errorf("info/refs: %d, want 401", code)
	}
	if code, _, _ := httpGet(t, p.clone+"/info/refs?service=git-receive-pack"); code != 401 {
		t.Errorf("info/refs receive-pack: %d, want 401", code)
	}
	for _, path := range []string{"/", "/" + p.npubID + ".git"} {
		code, _, body := httpGet(t, e.base+path)
		for _, leak := range []string{p.d, "topsecret-name", p.tip} {
			if path == "/" && strings.Contains(body, leak) {
				t.Errorf("page %s shows %q", path, leak)
			}
		}
		if path != "/" && (code != 404 || strings.Contains(body, "topsecret-name") || strings.Contains(body, p.tip)) {
			t.Errorf("private repository page: %d, want the not-found page", code)
		}
	}
	// Pages show public repositories only (pages.Shown): a browser sends no
	// NIP-98 token, so even a member's token does not open the page ...
	if code, _, _ := httpGet(t, p.clone, "Authorization", e.nip98(owner, p.clone)); code != 404 {
		t.Errorf("member's repository page: %d, want 404 (pages are public only)", code)
	}
	// ... while the same token reads the repository over git (positive control)
	if code, _, _ := httpGet(t, p.clone+"/info/refs?service=git-upload-pack", "Authorization", e.nip98(owner, p.clone)); code != 200 {
		t.Errorf("member's info/refs: %d, want 200", code)
	}
	// metrics carry no repository labels
	rec := httptest.NewRecorder()
	e.reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, leak := range []string{p.d, owner.Npub, owner.PK, "topsecret-name"} {
		if strings.Contains(rec.Body.String(), leak) {
			t.Errorf("metrics mention %q", leak)
		}
	}
	// NIP-11 lists GRASP-08; a relay with private repositories only does
	// not require AUTH for everything
	_, _, doc := httpGet(t, e.base, "Accept", "application/nostr+json")
	if !strings.Contains(doc, `"GRASP-08"`) || strings.Contains(doc, "auth_required") {
		t.Errorf("NIP-11: %s", doc)
	}
}

// public returns the events of evs that f matches.
func public(f nostr.Filter, evs ...*nostr.Event) []*nostr.Event {
	var out []*nostr.Event
	for _, e := range evs {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	return out
}

func idSet(evs []*nostr.Event) map[string]bool {
	m := map[string]bool{}
	for _, e := range evs {
		m[e.ID] = true
	}
	return m
}

// G08-5: kind 10318 is accepted only from its authenticated author and
// served to its author alone.
func TestG08_5_PrivateServerListOnlyForItsAuthor(t *testing.T) {
	e := newEnv(t, nil)
	author, other := newKey(t), newKey(t)
	list := e.sign(author, nip34.KindPrivateGraspList, nil, "ciphertext")
	e.dial().mustReject(list, "auth-required:")
	// go-nostr's client: the refusal brings the challenge, AUTH answers it,
	// and the author's list is then accepted
	// the refusal of an unauthenticated write brings the challenge
	connect := func(k key) *client {
		cl := e.dial()
		cl.send("EVENT", list)
		e.authRaw(cl, k)
		return cl
	}
	ac := connect(author)
	ac.mustAccept(list, "")
	oc := connect(other)
	f := nostr.Filter{Kinds: []int{nip34.KindPrivateGraspList}}
	if got := oc.query(f); len(got) != 0 {
		t.Fatalf("another key reads the 10318: %v", got)
	}
	if n := oc.count(f); n != 0 {
		t.Fatalf("another key counts the 10318: %d", n)
	}
	if got := e.dial().query(f); len(got) != 0 {
		t.Fatalf("an unauthenticated client reads the 10318")
	}
	if got := ac.query(f); len(got) != 1 || got[0].ID != list.ID {
		t.Fatalf("the author does not read its 10318: %v", got)
	}
}

// G08-6: service-wide private mode (grasp.private): nothing is served
// before AUTH, non-members are refused everything, a configured member
// hosts a repository with NIP-98 git, a key it invites may list back (and
// is a member from then on), NIP-11 says auth_required and offers neither
// GRASP-02 nor GRASP-06.
func TestG08_6_ServiceWidePrivateMode(t *testing.T) {
	admin, invitee, stranger := newKey(t), newKey(t), newKey(t)
	e := newEnv(t, func(c *config.Config) {
		c.Grasp.Private = true
		c.Grasp.PrivateMembers = []string{admin.Npub}
	})

	_, _, doc := httpGet(t, e.base, "Accept", "application/nostr+json")
	if !strings.Contains(doc, `"auth_required":true`) || !strings.Contains(doc, `"GRASP-08"`) || strings.Contains(doc, "GRASP-02") || strings.Contains(doc, "GRASP-06") {
		t.Fatalf("NIP-11: %s", doc)
	}
	anon := e.dial()
	anon.next(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	if r := anon.closedReason("REQ", nostr.Filter{Kinds: []int{1}}); !strings.HasPrefix(r, "auth-required:") {
		t.Fatalf("anonymous REQ: %q", r)
	}
	if r := anon.closedReason("COUNT", nostr.Filter{}); !strings.HasPrefix(r, "auth-required:") {
		t.Fatalf("anonymous COUNT: %q", r)
	}
	if l, msg := anon.negOpen(nostr.Filter{}); l != "NEG-ERR" || !strings.HasPrefix(msg, "auth-required:") {
		t.Fatalf("anonymous NEG-OPEN: %s %q", l, msg)
	}
	sc := e.dial()
	e.authRaw(sc, stranger)
	if r := sc.closedReason("REQ", nostr.Filter{Kinds: []int{1}}); !strings.HasPrefix(r, "restricted:") {
		t.Fatalf("non-member REQ: %q", r)
	}
	sc.mustReject(e.announcement(stranger, "mine"), "restricted:")

	// the configured member hosts a repository, inviting invitee
	w := newWork(t)
	tip := w.commit("v1")
	admConn := e.authed(admin)
	ann := e.announcement(admin, "team", nostr.Tag{"maintainers", invitee.PK})
	admConn.mustAccept(ann, purg)
	st := e.state(admin, "team", map[string]string{"refs/heads/main": tip}, "refs/heads/main")
	admConn.mustAccept(st, purg)
	clone := e.cloneURL(admin, "team")
	if out, err := gitRun(t, w.dir, "push", "--porcelain", clone, "main:refs/heads/main"); err == nil {
		t.Fatalf("push without NIP-98 succeeded:\n%s", out)
	}
	if out, err := e.gitAs(admin, clone, w.dir, "push", "--porcelain", clone, "main:refs/heads/main"); err != nil {
		t.Fatalf("member push: %v\n%s", err, out)
	}
	e.eventually("announcement released", 0, func() bool { return admConn.served(ann.ID) })
	// the invitee, not yet a member, may publish its own announcement
	// listing back, and then reads and clones as a confirmed maintainer
	invConn := e.authed(invitee)
	back := e.announcement(invitee, "team", nostr.Tag{"maintainers", admin.PK})
	invConn.mustAccept(back, "")
	e.eventually("invitee reads the repository", 0, func() bool { return invConn.served(ann.ID) })
	if out, err := e.gitAs(invitee, clone, t.TempDir(), "clone", "-q", clone, "c"); err != nil {
		t.Fatalf("confirmed maintainer's clone: %v\n%s", err, out)
	}
	// still nothing for the stranger
	if got := sc.closedReason("REQ", nostr.Filter{IDs: []string{ann.ID}}); !strings.HasPrefix(got, "restricted:") {
		t.Fatalf("non-member REQ after hosting: %q", got)
	}
	if code, _, _ := httpGet(t, clone+"/info/refs?service=git-upload-pack", "Authorization", e.nip98(stranger, clone)); code != 403 {
		t.Fatalf("non-member info/refs: %d", code)
	}
}
