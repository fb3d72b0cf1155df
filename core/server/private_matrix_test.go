package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// The GRASP-08 leak matrix (issue 23, "what it must show"): end to end,
// with the real git binary and NIP-42 clients. Rows are the read surfaces;
// columns the transitions a private repository goes through. Every cell
// asserts that nothing of the repository reaches a stranger (unauthenticated
// and signed in as a non-member) and, as a positive control, that a
// current member still reads it. Cells are subtests
// TestPrivate_LeakMatrix/<column>/<target>/<row>; the servers are shared
// by the cells of a column.

// peerLog is a foreign relay (khatru) that records every filter it is
// asked (REQ and NIP-77): what GRASP-02/03 sync names to other relays.
type peerLog struct {
	url     string
	mu      sync.Mutex
	filters []string
}

func newPeerLog(t *testing.T) *peerLog {
	t.Helper()
	p := &peerLog{}
	rl := khatru.NewRelay()
	rl.Log = log.New(io.Discard, "", 0)
	rl.Negentropy = true
	rl.QueryEvents = append(rl.QueryEvents, func(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
		p.mu.Lock()
		p.filters = append(p.filters, f.String())
		p.mu.Unlock()
		ch := make(chan *nostr.Event)
		close(ch)
		return ch, nil
	})
	srv := httptest.NewServer(rl)
	t.Cleanup(srv.Close)
	p.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return p
}

// named returns the recorded filters that contain any of needles.
func (p *peerLog) named(needles ...string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, f := range p.filters {
		if len(anyIn(f, needles...)) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// gitLog is a foreign git host that records the paths it is asked for and
// has nothing: where the hunter would fetch from.
type gitLog struct {
	url   string
	mu    sync.Mutex
	paths []string
}

func newGitLog(t *testing.T) *gitLog {
	t.Helper()
	g := &gitLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.paths = append(g.paths, r.URL.Path)
		g.mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

func (g *gitLog) asked(part string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.paths {
		if strings.Contains(p, part) {
			return true
		}
	}
	return false
}

// matrix is what the cells share: the foreign relay and git host, and a
// public repository (the positive control of the pages, sync and hunter).
type matrix struct {
	peer    *peerLog
	git     *gitLog
	public  key
	pubD    string
	pubIss  string // title of a public issue on the public repository
	archive []string
	// servers are the running servers, whose clocks the hunter row steps
	servers []*testServer
}

// target is one private repository as a column left it, and who must and
// must not read it.
type target struct {
	name     string
	owner    key
	d        string
	member   key    // reads it (positive control)
	stranger key    // reads nothing of it
	tip      string // its main branch
	secrets  []string
	readable []string // of secrets, what the member reads (still stored)
	issueID  string   // an event id named by #e/#E (its issue, maybe deleted)
	titles   []string // texts that must appear on no page
	prID     string   // its PR on /prs/
	ctl      string   // a public repository the hunter is asked for after it
	live     func(e *testServer) *nostr.Event
}

func (tg *target) coord() string {
	return nip34.RepoRef{Pubkey: tg.owner.PK, Identifier: tg.d}.String()
}

// matrixConfig is the servers' configuration: privacy offered, /prs/ on,
// sync to the peer, archive mode (not read-only) for the private owners,
// the hunter on 127.0.0.1.
func (m *matrix) config(staff key) func(c *config.Config) {
	return func(c *config.Config) {
		offerPrivate(c)
		c.Grasp.Grasp06 = true
		c.Grasp.PrivateMembers = []string{staff.Npub}
		c.Sync.Enabled = true
		c.Sync.BatchWindow = config.Duration(50 * time.Millisecond)
		c.Sync.BootstrapRelays = []string{m.peer.url}
		c.Grasp.ArchiveWhitelist = m.archive
		c.Grasp.ArchiveReadOnly = false
		c.Throttle.Concurrent = 1
	}
}

// mkTarget creates owner's private repository d on e (announcement naming
// the foreign relay and git host, state, push, issue, comment by E only,
// an issue also tagging the public repository, a PR on /prs/, and a newer
// state whose commit only the foreign host could have), with maintainers
// listed by extra tags.
func (m *matrix) mkTarget(t *testing.T, e *testServer, owner key, d string, extra ...nostr.Tag) *target {
	t.Helper()
	w := newWork(t)
	tip := w.commit("secret " + d)
	tags := append([]nostr.Tag{{"private", "true"}, {"name", "name-" + d}, {"clone", m.git.url + "/" + d + ".git"}, {"relays", m.peer.url}}, extra...)
	ann := e.announcement(owner, d, tags...)
	oc := e.publishPrivate(owner, ann)
	st := e.state(owner, d, map[string]string{"refs/heads/main": tip}, "refs/heads/main")
	oc.mustAccept(st, purg)
	clone := e.cloneURL(owner, d)
	if out, err := e.gitAs(owner, clone, w.dir, "push", "--porcelain", clone, "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	e.eventually("released", 0, func() bool { return oc.served(ann.ID) })
	tg := &target{name: d, owner: owner, d: d, member: owner, tip: tip}
	coord := tg.coord()
	issue := e.sign(owner, 1621, nostr.Tags{{"a", coord}, {"subject", "issue-title-" + d}}, "issue body "+d)
	oc.mustAccept(issue, "")
	comment := e.sign(owner, 1111, nostr.Tags{{"E", issue.ID}, {"K", "1621"}, {"e", issue.ID}, {"k", "1621"}}, "comment "+d)
	oc.mustAccept(comment, "")
	cross := e.sign(owner, 1621, nostr.Tags{{"a", coord}, {"a", nip34.RepoRef{Pubkey: m.public.PK, Identifier: m.pubD}.String()}, {"subject", "cross-title-" + d}}, "")
	oc.mustAccept(cross, "")
	p := w.commit("proposal " + d)
	prs := e.prsURL(owner, d)
	pr := e.prEvent(owner, owner, d, p, prs)
	oc.mustAccept(pr, "")
	if out, err := e.gitAs(owner, prs, w.dir, "push", "--porcelain", prs, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push to /prs/: %v\n%s", err, out)
	}
	e.eventually("PR released", 0, func() bool { return oc.served(pr.ID) })
	// a newer state whose commit is only on the foreign host: the hunter
	// would fetch it there, were the repository not private
	e.clk.Advance(time.Second)
	held := e.state(owner, d, map[string]string{"refs/heads/main": strings.Repeat("ab", 20)}, "refs/heads/main")
	if ok, msg := e.srv.Relay().Ingest(context.Background(), held, policy.Meta{Source: policy.SourceSync, Remote: "ws://peer.example"}); !ok {
		t.Fatalf("held state: %q", msg)
	}
	// and then a public repository's, on the same foreign host: the
	// hunter's positive control (one fetch at a time per host, so a fetch
	// for the private repository, due first, would come first)
	tg.ctl = d + "ctl"
	ctlOwner := newKey(t)
	cw := newWork(t)
	e.release(ctlOwner, tg.ctl, cw, cw.commit("control"), nostr.Tag{"clone", m.git.url + "/" + tg.ctl + ".git"})
	e.clk.Advance(time.Second)
	ctlHeld := e.state(ctlOwner, tg.ctl, map[string]string{"refs/heads/main": strings.Repeat("ef", 20)}, "refs/heads/main")
	if ok, msg := e.srv.Relay().Ingest(context.Background(), ctlHeld, policy.Meta{Source: policy.SourceSync, Remote: "ws://peer.example"}); !ok {
		t.Fatalf("control held state: %q", msg)
	}
	tg.secrets = []string{ann.ID, st.ID, issue.ID, comment.ID, cross.ID, pr.ID}
	tg.readable = append([]string(nil), tg.secrets...)
	tg.issueID, tg.prID = issue.ID, pr.ID
	tg.titles = []string{"name-" + d, "issue-title-" + d, "cross-title-" + d, "comment " + d}
	tg.live = func(e *testServer) *nostr.Event {
		return e.sign(tg.member, 1621, nostr.Tags{{"a", tg.coord()}, {"subject", "live " + d}}, nonce())
	}
	return tg
}

// without removes ids from the member's readable set (deleted events).
func (tg *target) without(ids ...string) {
	var keep []string
	for _, r := range tg.readable {
		if !strings.Contains(strings.Join(ids, ","), r) {
			keep = append(keep, r)
		}
	}
	tg.readable = keep
}

// The rows: each reads one surface as the strangers and as the member.
var matrixRows = []struct {
	name string
	run  func(t *testing.T, m *matrix, e *testServer, tg *target)
}{
	{"REQ ids", rowNamed(func(tg *target) nostr.Filter { return nostr.Filter{IDs: tg.secrets} })},
	{"REQ #a", rowNamed(func(tg *target) nostr.Filter { return nostr.Filter{Tags: nostr.TagMap{"a": {tg.coord()}}} })},
	{"REQ #e #E", rowEvents},
	{"REQ broad", rowBroad},
	{"COUNT", rowCount},
	{"NEG-OPEN", rowNeg},
	{"live delivery", rowLive},
	{"git clone", rowClone},
	{"git push", rowPush},
	{"git /prs/", rowPRs},
	{"pages", rowPages},
	{"NIP-11", rowNIP11},
	{"metrics", rowMetrics},
	{"admin status", rowAdmin},
	{"sync", rowSync},
	{"archive", rowArchive},
	{"hunter", rowHunter},
}

// strangers are an unauthenticated connection and one signed in as the
// target's stranger, with the prefix each is refused with.
func strangers(e *testServer, tg *target) map[string]*client {
	anon := e.dial()
	signed := e.dial()
	e.signIn(signed, tg.stranger)
	return map[string]*client{"auth-required:": anon, "restricted:": signed}
}

func member(e *testServer, tg *target) *client { return e.signedIn(tg.member) }

func rowNamed(filter func(*target) nostr.Filter) func(t *testing.T, m *matrix, e *testServer, tg *target) {
	return func(t *testing.T, m *matrix, e *testServer, tg *target) {
		f := filter(tg)
		for prefix, cl := range strangers(e, tg) {
			if r := cl.closedReason("REQ", f); !strings.HasPrefix(r, prefix) {
				t.Errorf("stranger: CLOSED %q, want %s", r, prefix)
			}
			if got := secretsIn(cl.query(f), tg.secrets); len(got) > 0 {
				t.Errorf("stranger read %v", got)
			}
		}
		if got := secretsIn(member(e, tg).query(f), tg.readable); len(got) == 0 {
			t.Errorf("member reads nothing")
		}
	}
}

func rowEvents(t *testing.T, m *matrix, e *testServer, tg *target) {
	for _, key := range []string{"e", "E"} {
		f := nostr.Filter{Tags: nostr.TagMap{key: {tg.issueID}}}
		for _, cl := range strangers(e, tg) {
			if got := secretsIn(cl.query(f), tg.secrets); len(got) > 0 {
				t.Errorf("stranger #%s read %v", key, got)
			}
		}
		if got := secretsIn(member(e, tg).query(f), tg.readable); len(got) == 0 {
			t.Errorf("member #%s reads nothing", key)
		}
	}
}

func broadFilters(tg *target) []nostr.Filter {
	return []nostr.Filter{
		{Kinds: []int{30617, 30618, 1621, 1111, 1618, 5}},
		{Authors: []string{tg.owner.PK}},
		{Tags: nostr.TagMap{"d": {tg.d}}},
		{Tags: nostr.TagMap{"k": {"1621"}}},
		{},
	}
}

func rowBroad(t *testing.T, m *matrix, e *testServer, tg *target) {
	for _, f := range broadFilters(tg) {
		for _, cl := range strangers(e, tg) {
			if got := secretsIn(cl.query(f), tg.secrets); len(got) > 0 {
				t.Errorf("stranger %s read %v", f, got)
			}
		}
	}
	if got := secretsIn(member(e, tg).query(nostr.Filter{Authors: []string{tg.owner.PK}, Limit: 500}), tg.readable); len(got) == 0 {
		t.Errorf("member reads nothing by author")
	}
}

func rowCount(t *testing.T, m *matrix, e *testServer, tg *target) {
	f := nostr.Filter{Kinds: []int{1111, 1621, 1618, 30618}, Authors: []string{tg.owner.PK}}
	for prefix, cl := range strangers(e, tg) {
		if n := cl.count(f); n != 0 {
			t.Errorf("stranger counts %d of the owner's events", n)
		}
		if r := cl.closedReason("COUNT", nostr.Filter{IDs: tg.secrets}); !strings.HasPrefix(r, prefix) {
			t.Errorf("stranger COUNT ids: %q, want %s", r, prefix)
		}
	}
	if n := member(e, tg).count(nostr.Filter{IDs: tg.readable}); n != len(tg.readable) {
		t.Errorf("member counts %d, want %d", n, len(tg.readable))
	}
}

func rowNeg(t *testing.T, m *matrix, e *testServer, tg *target) {
	f := nostr.Filter{Authors: []string{tg.owner.PK}}
	for _, cl := range strangers(e, tg) {
		l, msg := cl.negOpen(f)
		if l != "NEG-MSG" || len(anyIn(msg, tg.secrets...)) > 0 {
			t.Errorf("stranger NEG-OPEN: %s, private ids %v", l, anyIn(msg, tg.secrets...))
		}
	}
	if _, msg := member(e, tg).negOpen(f); len(anyIn(msg, tg.readable...)) == 0 {
		t.Errorf("member's NEG-OPEN holds none of its events")
	}
}

func rowLive(t *testing.T, m *matrix, e *testServer, tg *target) {
	f := nostr.Filter{Kinds: []int{1621, 1111, nip34.KindGraspList}, Limit: 0, LimitZero: true}
	subs := strangers(e, tg)
	mc := member(e, tg)
	subs["member"] = mc
	for _, cl := range subs {
		cl.send("REQ", "live", f)
		cl.next(func(m []jsonMsg) bool { return label(m) == "EOSE" && str(m[1]) == "live" })
	}
	evt := tg.live(e)
	// from another connection: a publisher's own connection reads (and a
	// client drops) the EVENT before its OK
	member(e, tg).mustAccept(evt, "")
	marker := e.sign(newKey(t), nip34.KindGraspList, nostr.Tags{{"g", e.ws}}, "")
	e.dial().mustAccept(marker, "")
	for who, cl := range subs {
		m := cl.next(func(m []jsonMsg) bool { return label(m) == "EVENT" && str(m[1]) == "live" })
		var got nostr.Event
		unmarshal(m[2], &got)
		want := marker.ID
		if who == "member" {
			want = evt.ID
		}
		if got.ID != want {
			t.Errorf("%s was delivered %s (kind %d %q %v) first, want %s", who, got.ID, got.Kind, got.Content, got.Tags, want)
		}
	}
}

func (e *testServer) cloneOf(tg *target) string { return e.cloneURL(tg.owner, tg.d) }

func rowClone(t *testing.T, m *matrix, e *testServer, tg *target) {
	clone := e.cloneOf(tg)
	if code := infoRefsStatus(t, clone); code != http.StatusUnauthorized {
		t.Errorf("anonymous info/refs: %d, want 401", code)
	}
	if out, err := e.gitAsPublic(tg.stranger, tg, t.TempDir(), "clone", "-q", clone, "c"); err == nil {
		t.Errorf("the stranger cloned it:\n%s", out)
	}
	dst := t.TempDir()
	if out, err := e.gitAsPublic(tg.member, tg, dst, "clone", "-q", clone, "c"); err != nil {
		t.Errorf("member's clone: %v\n%s", err, out)
	} else if head := mustGit(t, dst+"/c", "rev-parse", "HEAD"); head != tg.tip {
		t.Errorf("member cloned %s, want %s", head, tg.tip)
	}
}

// gitAsPublic runs git with k's token for tg's public clone URL.
func (e *testServer) gitAsPublic(k key, tg *target, dir string, args ...string) (string, error) {
	e.t.Helper()
	if k.SK != "" {
		args = append([]string{"-c", "http.extraHeader=Authorization: " + e.token(k, e.publicClone(tg.owner, tg.d), "GET")}, args...)
	}
	return gitRun(e.t, dir, args...)
}

func rowPush(t *testing.T, m *matrix, e *testServer, tg *target) {
	u := e.cloneOf(tg) + "/info/refs?service=git-receive-pack"
	tok := func(k key) string { return e.token(k, e.publicClone(tg.owner, tg.d), "GET") }
	if code, _, _ := httpGet(t, u); code != http.StatusUnauthorized {
		t.Errorf("receive-pack advertisement without a token: %d", code)
	}
	if code, _, _ := httpGet(t, u, "Authorization", tok(tg.stranger)); code != http.StatusForbidden {
		t.Errorf("receive-pack advertisement with the stranger's token: %d", code)
	}
	w := newWork(t)
	w.commit("intruder")
	if out, err := e.gitAsPublic(tg.stranger, tg, w.dir, "push", "--porcelain", e.cloneOf(tg), "main:refs/heads/main"); err == nil {
		t.Errorf("stranger pushed:\n%s", out)
	}
	if code, _, body := httpGet(t, u, "Authorization", tok(tg.member)); code != http.StatusOK || !strings.Contains(body, tg.tip) {
		t.Errorf("member's receive-pack advertisement: %d", code)
	}
}

func rowPRs(t *testing.T, m *matrix, e *testServer, tg *target) {
	prs := e.prsURL(tg.owner, tg.d)
	public := strings.TrimSuffix(e.cfg.Server.PublicURL, "/") + nip34.PRsRepo(tg.owner.PK, tg.d).URLPath()
	if code := infoRefsStatus(t, prs); code != http.StatusUnauthorized {
		t.Errorf("anonymous /prs/ info/refs: %d, want 401", code)
	}
	if out, err := gitRun(t, t.TempDir(), "-c", "http.extraHeader=Authorization: "+e.token(tg.stranger, public, "GET"), "ls-remote", prs); err == nil || strings.Contains(out, tg.prID) {
		t.Errorf("the stranger lists /prs/: %v\n%s", err, out)
	}
	out, err := gitRun(t, t.TempDir(), "-c", "http.extraHeader=Authorization: "+e.token(tg.member, public, "GET"), "ls-remote", prs)
	if err != nil || !strings.Contains(out, "refs/nostr/"+tg.prID) {
		t.Errorf("member's ls-remote of /prs/: %v\n%s", err, out)
	}
}

func rowPages(t *testing.T, m *matrix, e *testServer, tg *target) {
	for _, path := range []string{"/" + tg.owner.Npub + "/" + tg.d + ".git", "/" + tg.owner.Npub + "/" + tg.d + ".git/commit/" + tg.tip,
		"/" + tg.owner.Npub + "/" + tg.d + ".git/tree/main", "/" + tg.owner.Npub + "/" + tg.d + ".git/issues"} {
		code, _, body := httpGet(t, e.base+path, "Authorization", e.token(tg.member, e.publicClone(tg.owner, tg.d), "GET"))
		if code != http.StatusNotFound || len(anyIn(body, tg.titles...)) > 0 {
			t.Errorf("page %s: %d %v", path, code, anyIn(body, tg.titles...))
		}
	}
	_, _, landing := httpGet(t, e.base+"/")
	_, _, pubIssues := httpGet(t, e.base+"/"+m.public.Npub+"/"+m.pubD+".git/issues")
	for name, body := range map[string]string{"landing": landing, "public repository's issues": pubIssues} {
		if leaks := anyIn(body, append(tg.titles, tg.d+".git")...); len(leaks) > 0 {
			t.Errorf("%s page shows %v", name, leaks)
		}
	}
	// positive control: the pages work, the public issue is listed
	if !strings.Contains(pubIssues, m.pubIss) {
		t.Errorf("the public repository's issues page lacks its public issue")
	}
}

func rowNIP11(t *testing.T, m *matrix, e *testServer, tg *target) {
	_, _, doc := httpGet(t, e.base, "Accept", "application/nostr+json")
	if leaks := anyIn(doc, append(tg.titles, tg.d, tg.owner.Npub, tg.owner.PK)...); len(leaks) > 0 {
		t.Errorf("NIP-11 shows %v", leaks)
	}
	if !strings.Contains(doc, `"GRASP-08"`) {
		t.Errorf("NIP-11 does not offer GRASP-08: %s", doc)
	}
}

func rowMetrics(t *testing.T, m *matrix, e *testServer, tg *target) {
	rec := httptest.NewRecorder()
	e.reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if leaks := anyIn(rec.Body.String(), append(tg.titles, tg.d, tg.owner.Npub, tg.owner.PK)...); len(leaks) > 0 {
		t.Errorf("metrics show %v", leaks)
	}
	if !strings.Contains(rec.Body.String(), "grasp_build_info") {
		t.Error("metrics lack grasp_build_info")
	}
}

func rowAdmin(t *testing.T, m *matrix, e *testServer, tg *target) {
	src := e.srv.AdminSources()
	if !e.leads() {
		src.Sync = nil // the sync part is the leader's
	}
	st, err := admin.Build(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	if leaks := anyIn(string(b), append(tg.titles, tg.d, tg.owner.Npub, tg.owner.PK)...); len(leaks) > 0 {
		t.Errorf("admin status shows %v", leaks)
	}
	if st.PrivateRepos == 0 {
		t.Error("admin status counts no private repository")
	}
}

func rowSync(t *testing.T, m *matrix, e *testServer, tg *target) {
	pub := nip34.RepoRef{Pubkey: m.public.PK, Identifier: m.pubD}.String()
	e.eventually("sync names the public repository to the peer", syncStep, func() bool { return len(m.peer.named(pub)) > 0 })
	if got := m.peer.named(append(tg.secrets, tg.coord(), tg.owner.PK+":"+tg.d)...); len(got) > 0 {
		t.Errorf("sync named the private repository to another relay: %v", got)
	}
}

func rowArchive(t *testing.T, m *matrix, e *testServer, tg *target) {
	// archive mode covers the owner (archive_whitelist), yet the
	// repository is not mirrored in the open: still a 401
	if code := infoRefsStatus(t, e.cloneOf(tg)); code != http.StatusUnauthorized {
		t.Errorf("an archived owner's private repository: info/refs %d, want 401", code)
	}
	if e.metric("grasp_archive_repos", "") < 0 {
		t.Error("no archive gauge")
	}
	rowMetrics(t, m, e, tg)
}

func rowHunter(t *testing.T, m *matrix, e *testServer, tg *target) {
	ctl := tg.ctl
	if ctl == "" {
		ctl = m.pubD
	}
	testwait.Stepping(t, "the hunter asks the foreign host for the public control", func() {
		for _, s := range m.servers {
			s.clk.Advance(time.Second)
		}
	}, func() bool { return m.git.asked("/" + ctl + ".git") })
	if m.git.asked("/" + tg.d + ".git") {
		t.Errorf("the hunter asked the foreign host for the private repository")
	}
}

// mkPublic is the public control: a repository naming the peer and the
// foreign host, with a public issue and a held state only the foreign host
// could complete.
func (m *matrix) mkPublic(t *testing.T, e *testServer) {
	t.Helper()
	w := newWork(t)
	e.release(m.public, m.pubD, w, w.commit("open"), nostr.Tag{"clone", m.git.url + "/" + m.pubD + ".git"}, nostr.Tag{"relays", m.peer.url})
	coord := nip34.RepoRef{Pubkey: m.public.PK, Identifier: m.pubD}.String()
	e.dial().mustAccept(e.sign(m.public, 1621, nostr.Tags{{"a", coord}, {"subject", m.pubIss}}, ""), "")
	e.clk.Advance(time.Second)
	held := e.state(m.public, m.pubD, map[string]string{"refs/heads/main": strings.Repeat("cd", 20)}, "refs/heads/main")
	if ok, msg := e.srv.Relay().Ingest(context.Background(), held, policy.Meta{Source: policy.SourceSync, Remote: "ws://peer.example"}); !ok {
		t.Fatalf("public held state: %q", msg)
	}
}

// runRows runs every row against each target on e. Each cell gets e bound
// to its own subtest (helpers fail the cell, not the whole test) and its
// connections are closed when it ends.
func runRows(t *testing.T, m *matrix, e *testServer, targets ...*target) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			for _, row := range matrixRows {
				t.Run(row.name, func(t *testing.T) {
					cell := *e
					cell.t = t
					row.run(t, m, &cell, tg)
				})
			}
		})
	}
}

// pv names a matrix repository distinctively (its name must not occur in
// NIP-11 or metric names by chance).
func pv(column string) string { return "pv" + column + "q7z" }

func TestPrivate_LeakMatrix(t *testing.T) {
	staff := newKey(t)
	owners := map[string]key{}
	for _, c := range []string{"created", "deleted", "dropped", "sighup", "issuedel", "second", "seconddrop"} {
		owners[c] = newKey(t)
	}
	m := &matrix{peer: newPeerLog(t), git: newGitLog(t), public: newKey(t), pubD: "open-control", pubIss: "a-public-issue-title"}
	for _, k := range owners {
		m.archive = append(m.archive, k.Npub)
	}
	e := newEnv(t, m.config(staff))
	m.servers = []*testServer{e}
	m.mkPublic(t, e)
	stranger := newKey(t)
	var all []*target
	reloaded := &e.cfg

	t.Run("created private", func(t *testing.T) {
		tg := m.mkTarget(t, e, owners["created"], pv("created"))
		tg.stranger = stranger
		all = append(all, tg)
		runRows(t, m, e, tg)
	})
	t.Run("announcement deleted", func(t *testing.T) {
		tg := m.mkTarget(t, e, owners["deleted"], pv("deleted"))
		tg.stranger = stranger
		ann := tg.secrets[0]
		e.signedIn(tg.owner).mustAccept(e.sign(tg.owner, 5, nostr.Tags{{"e", ann}, {"a", tg.coord()}}, ""), "")
		tg.without(ann)
		tg.live = func(e *testServer) *nostr.Event {
			// no announcement: a comment on the surviving issue
			return e.sign(tg.member, 1111, nostr.Tags{{"E", tg.issueID}, {"e", tg.issueID}, {"k", "1621"}}, "live "+nonce())
		}
		all = append(all, tg)
		runRows(t, m, e, tg)
	})
	t.Run("maintainer dropped", func(t *testing.T) {
		owner, maint := owners["dropped"], newKey(t)
		tg := m.mkTarget(t, e, owner, pv("dropped"), nostr.Tag{"maintainers", maint.PK})
		mc := e.signedIn(maint)
		back := e.announcement(maint, pv("dropped"), nostr.Tag{"maintainers", owner.PK})
		mc.mustAccept(back, "")
		copyURL := e.cloneURL(maint, pv("dropped"))
		e.eventually("the maintainer's copy holds the history", 0, func() bool {
			out, err := e.gitAs(maint, copyURL, t.TempDir(), "ls-remote", copyURL)
			return err == nil && strings.Contains(out, tg.tip)
		})
		copyTg := m.mkCopyTarget(t, e, maint, pv("dropped"), tg.tip, back)
		tg.without(tg.secrets[0]) // the announcement the drop replaces
		e.clk.Advance(2 * time.Second)
		e.signedIn(owner).mustAccept(e.announcement(owner, pv("dropped"), nostr.Tag{"private", "true"}, nostr.Tag{"name", "name-" + pv("dropped")}), "")
		tg.stranger = maint // the dropped maintainer reads the owner's repository no more
		copyTg.stranger = stranger
		all = append(all, tg, copyTg)
		runRows(t, m, e, tg, copyTg)
	})
	t.Run("member removed by reload", func(t *testing.T) {
		tg := m.mkTarget(t, e, owners["sighup"], pv("sighup"))
		tg.member = staff
		if got := secretsIn(member(e, tg).query(nostr.Filter{IDs: tg.secrets}), tg.secrets); len(got) != len(tg.secrets) {
			t.Fatalf("the configured member reads %d of %d before the reload", len(got), len(tg.secrets))
		}
		// the operator edits grasp.toml and sends SIGHUP (cmd/grasp calls
		// Reload; TestG08_SIGHUPRemovesAMemberAtOnce sends the signal)
		next := e.cfg
		next.Grasp.PrivateMembers = nil
		e.srv.Reload(next)
		reloaded = &next
		tg.member, tg.stranger = tg.owner, staff
		all = append(all, tg)
		runRows(t, m, e, tg)
	})
	t.Run("issue deleted under its comments", func(t *testing.T) {
		tg := m.mkTarget(t, e, owners["issuedel"], pv("issuedel"))
		tg.stranger = stranger
		del := e.sign(tg.owner, 5, nostr.Tags{{"e", tg.issueID}}, "")
		e.signedIn(tg.owner).mustAccept(del, "")
		tg.secrets = append(tg.secrets, del.ID)
		tg.readable = append(tg.readable, del.ID)
		tg.without(tg.issueID)
		all = append(all, tg)
		runRows(t, m, e, tg)
	})
	t.Run("server restarted", func(t *testing.T) {
		e = e.restartOn(*reloaded)
		m.servers = []*testServer{e}
		runRows(t, m, e, all...)
	})
	t.Run("read via a second instance", func(t *testing.T) {
		in := newInstances(t, 2, m.config(staff))
		a, b := in[0], in[1]
		m.servers = in
		m.mkPublic(t, a)
		tg := m.mkTarget(t, a, owners["second"], pv("second"))
		tg.stranger = stranger
		owner, maint := owners["seconddrop"], newKey(t)
		dt := m.mkTarget(t, a, owner, pv("seconddrop"), nostr.Tag{"maintainers", maint.PK})
		b.signedIn(maint).mustAccept(a.announcement(maint, pv("seconddrop"), nostr.Tag{"maintainers", owner.PK}), "")
		// the maintainer reads it through B, then is dropped through A
		if got := secretsIn(b.signedIn(maint).query(nostr.Filter{IDs: dt.secrets}), dt.secrets); len(got) != len(dt.secrets) {
			t.Fatalf("the maintainer reads %d of %d through B before being dropped", len(got), len(dt.secrets))
		}
		dt.without(dt.secrets[0]) // the announcement the drop replaces
		a.clk.Advance(2 * time.Second)
		a.signedIn(owner).mustAccept(a.announcement(owner, pv("seconddrop"), nostr.Tag{"private", "true"}, nostr.Tag{"name", "name-" + pv("seconddrop")}), "")
		dt.stranger = maint
		b.eventually("B follows the drop", 0, func() bool {
			return len(secretsIn(b.signedIn(maint).query(nostr.Filter{Authors: []string{owner.PK}}), dt.secrets)) == 0
		})
		runRows(t, m, b, tg, dt)
	})
}

// mkCopyTarget is maintainer's own copy of d (its announcement back, the
// history propagated into it) as a target: its own issue, comment and PR
// are added now, while it is still a maintainer.
func (m *matrix) mkCopyTarget(t *testing.T, e *testServer, maint key, d, tip string, back *nostr.Event) *target {
	t.Helper()
	tg := &target{name: d + " (the maintainer's copy)", owner: maint, d: d, member: maint, tip: tip}
	mc := e.signedIn(maint)
	// its issue must not wait in purgatory with a held announcement
	e.eventually("the maintainer's announcement stored", 0, func() bool { return mc.served(back.ID) })
	issue := e.sign(maint, 1621, nostr.Tags{{"a", tg.coord()}, {"subject", "copy-issue-" + d}}, "")
	mc.mustAccept(issue, "")
	comment := e.sign(maint, 1111, nostr.Tags{{"E", issue.ID}, {"e", issue.ID}, {"k", "1621"}}, "copy comment "+d)
	mc.mustAccept(comment, "")
	w := newWork(t)
	p := w.commit("copy proposal " + d)
	prs := e.prsURL(maint, d)
	pr := e.prEvent(maint, maint, d, p, prs)
	mc.mustAccept(pr, "")
	if out, err := e.gitAs(maint, prs, w.dir, "push", "--porcelain", prs, p+":refs/nostr/"+pr.ID); err != nil {
		t.Fatalf("push to /prs/: %v\n%s", err, out)
	}
	e.eventually("PR released", 0, func() bool { return mc.served(pr.ID) })
	tg.secrets = []string{back.ID, issue.ID, comment.ID, pr.ID}
	tg.readable = append([]string(nil), tg.secrets...)
	tg.issueID, tg.prID = issue.ID, pr.ID
	tg.titles = []string{"copy-issue-" + d, "copy comment " + d}
	tg.live = func(e *testServer) *nostr.Event {
		return e.sign(tg.member, 1621, nostr.Tags{{"a", tg.coord()}, {"subject", "live copy"}}, nonce())
	}
	return tg
}

// nonce makes an event unique: a restarted server's clock may repeat a
// second an event was already signed in, and the same event again is a
// duplicate, stored and delivered once.
func nonce() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }
