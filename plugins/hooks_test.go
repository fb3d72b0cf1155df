package plugins

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/grasp-dev/grasp/internal/testlog"
)

func cands(urls ...string) []relaysync.Candidate {
	out := make([]relaysync.Candidate, len(urls))
	for i, u := range urls {
		out[i] = relaysync.Candidate{URL: u, Source: relaysync.FromConfig, Health: relaysync.Health{OK: true, Failures: i, LatencyMs: int64(10 * i), LastOK: t0}}
	}
	return out
}

func TestSelectRelaysFold(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rev.js", `module.exports = { selectRelays(c, ctx) { return c.map(x => x.url).reverse().concat(["wss://invented"]) } };`)
	write(t, dir, "drop.js", `module.exports = { selectRelays(c, ctx) {
		if (ctx.repo.address !== "30617:pk:d" || c[0].health.lastOk !== 1767323045 || c[0].source !== "config") throw new Error("bad input");
		return c.filter(x => x.url !== ctx.config.drop);
	} };`)
	write(t, dir, "none.js", `module.exports = { selectRelays() {} };`)
	write(t, dir, "bad.js", `module.exports = { selectRelays() { return "wss://a" } };`)
	var logs testlog.Buffer
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Logger: testLogger(&logs), RelaySelection: []Spec{
		{Name: "rev", File: "rev.js"}, {Name: "none", File: "none.js"}, {Name: "bad", File: "bad.js"},
		{Name: "drop", File: "drop.js", Config: map[string]any{"drop": "wss://b"}},
	}})
	got, err := s.SelectRelays(context.Background(), relaysync.RepoInfo{Pubkey: "pk", Identifier: "d", Address: "30617:pk:d"}, cands("wss://a", "wss://b", "wss://c"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "wss://c wss://a" {
		t.Fatalf("got %v", got)
	}
	if !strings.Contains(logs.String(), "wss://invented") {
		t.Fatal("unknown URL not warned about")
	}
	// on_error = reject returns the error.
	s = mustSet(t, Options{Dir: dir, PoolSize: 1, RelaySelection: []Spec{{Name: "bad", File: "bad.js", OnError: OnErrorReject}}})
	if _, err := s.SelectRelays(context.Background(), relaysync.RepoInfo{}, cands("wss://a")); err == nil {
		t.Fatal("failing selection with on_error=reject returned no error")
	}
}

func TestThrottleFoldAndReturns(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.js", `module.exports = { throttle(d, cur, ctx) { if (d === "big.org") return { concurrency: cur.concurrency * 2 } } };`)
	write(t, dir, "b.js", `module.exports = { throttle(d, cur, ctx) { if (d === "big.org") return { perMinute: ctx.config.rate } } };`)
	write(t, dir, "bad.js", `module.exports = { throttle(d) { return d === "x" ? { perMinute: "fast" } : d === "y" ? { concurrency: 0 } : d === "z" ? 5 : undefined } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Throttle: []Spec{
		{Name: "a", File: "a.js"}, {Name: "bad", File: "bad.js"}, {Name: "b", File: "b.js", Config: map[string]any{"rate": 90}},
	}})
	cur := throttle.Limits{Concurrency: 5, PerMinute: 30}
	got, err := s.Throttle(context.Background(), "big.org", cur)
	if err != nil || got != (throttle.Limits{Concurrency: 10, PerMinute: 90}) {
		t.Fatalf("got %+v %v", got, err)
	}
	for _, d := range []string{"x", "y", "z"} {
		if got, err := s.Throttle(context.Background(), d, cur); err != nil || got != cur {
			t.Errorf("%s: bad return not skipped: %+v %v", d, got, err)
		}
	}
}

func TestStoreHonoursDeadline(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "q.js", `module.exports = { accept(e) { if (grasp.store.count({kinds: [30617], authors: [e.pubkey], "#d": ["x"]}) > 0) return "exists" } };`)
	clk := clock.NewFake(t0)
	st := &fakeStore{block: true, entered: make(chan struct{})}
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Clock: clk, Store: st, Accept: []Spec{acceptSpec("q", "q.js")}})
	ch := runAsync(s, testEvent(1, ""))
	<-st.entered
	clk.Advance(DefaultAcceptTimeout)
	if v := waitVerdict(t, ch); v.Action != policy.Reject || !strings.HasPrefix(v.Msg, "error:") {
		t.Fatalf("got %+v", v)
	}
	f := st.filters[0]
	if f.Kinds[0] != 30617 || f.Authors[0] != testEvent(1, "").PubKey || f.Tags["d"][0] != "x" {
		t.Fatalf("filter not passed through: %+v", f)
	}
	// Without blocking, the count reaches the script.
	st2 := &fakeStore{n: 1}
	s = mustSet(t, Options{Dir: dir, PoolSize: 1, Store: st2, Accept: []Spec{acceptSpec("q", "q.js")}})
	if v := s.Accept(context.Background(), testEvent(1, ""), clientMeta()); v.Msg != "blocked: exists" {
		t.Fatalf("got %+v", v)
	}
}

func TestKVTTLAndRateLimitUseInjectedClock(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept(e) {
		if (e.content === "set") { grasp.kv.set("k", {n: [1,2]}, 60); return }
		if (e.content === "get") { const v = grasp.kv.get("k"); return v === undefined ? "missing" : "got " + v.n[1] }
		if (e.content === "del") { grasp.kv.del("k"); return }
		return grasp.ratelimit("key", 60, 2) ? undefined : "rate-limited: slow"
	} };`)
	clk := clock.NewFake(t0)
	s := mustSet(t, Options{Dir: dir, PoolSize: 2, Clock: clk, Accept: []Spec{acceptSpec("p", "p.js")}})
	run := func(c string) string { return s.Accept(context.Background(), testEvent(1, c), clientMeta()).Msg }
	run("set")
	if got := run("get"); got != "blocked: got 2" {
		t.Fatal(got)
	}
	clk.Advance(59 * time.Second)
	if got := run("get"); got != "blocked: got 2" {
		t.Fatal(got)
	}
	clk.Advance(time.Second)
	if got := run("get"); got != "blocked: missing" {
		t.Fatalf("kv entry outlived its TTL: %s", got)
	}
	run("set")
	run("del")
	if got := run("get"); got != "blocked: missing" {
		t.Fatal(got)
	}
	first, second, third := run("rl"), run("rl"), run("rl")
	if first != "" || second != "" || third != "rate-limited: slow" {
		t.Fatalf("burst of 2 not enforced: %q %q %q", first, second, third)
	}
	clk.Advance(time.Second) // 60/min = one token per second
	if run("rl") != "" || run("rl") != "rate-limited: slow" {
		t.Fatal("refill not one token per second")
	}
}

func TestLogAndConsoleReachHclog(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `console.log("loading"); module.exports = { accept(e) { grasp.log.warn("looked at", {kind: e.kind}); console.error("oops", 1) } };`)
	var logs testlog.Buffer
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Logger: testLogger(&logs), Accept: []Spec{acceptSpec("lg", "p.js")}})
	s.Accept(context.Background(), testEvent(7, ""), clientMeta())
	out := logs.String()
	for _, want := range []string{"[INFO]  plugin.lg: loading", "[WARN]  plugin.lg: looked at: kind=7", "[ERROR] plugin.lg: oops 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckReportsMissingExports(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.js", `module.exports = { accept() {} };`)
	if err := Check(Options{Dir: dir, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("a", "a.js")}}); err != nil {
		t.Fatal(err)
	}
	err := Check(Options{Dir: dir, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("a", "a.js")}, Throttle: []Spec{{Name: "t", File: "a.js"}}})
	if err == nil || !strings.Contains(err.Error(), `a.js does not export a function "throttle"`) {
		t.Fatalf("got %v", err)
	}
	err = Check(Options{Dir: dir, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("a", "a.js"), acceptSpec("a", "a.js")}})
	if err == nil || !strings.Contains(err.Error(), "duplicate name") {
		t.Fatalf("got %v", err)
	}
}

func TestTestEventsPrintsOneVerdictPerLine(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept(e, ctx) {
		if (ctx.source === "sync") return { action: "shadowReject" };
		if (e.kind === 1) return "no notes";
	} };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("p", "p.js")}})
	in := strings.Join([]string{
		`{"id":"01","pubkey":"aa","created_at":1,"kind":1,"tags":[],"content":"x","sig":"ff"}`,
		`{"id":"02","pubkey":"aa","created_at":1,"kind":30617,"tags":[["d","r"]],"content":"","sig":"ff"}`,
		`{"event":{"id":"03","pubkey":"aa","created_at":1,"kind":30617,"tags":[],"content":"","sig":"ff"},"source":"sync"}`,
		`not json`,
		``,
		`{"event":{"id":"04"},"source":"elsewhere"}`,
	}, "\n")
	var out bytes.Buffer
	if _, err := TestEvents(context.Background(), s, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"01 reject blocked: no notes", "02 accept", "03 shadowReject", "line 4: invalid:", "line 6: invalid: source must be"}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), out.String())
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d: %q, want prefix %q", i, lines[i], want[i])
		}
	}
}

type panicStore struct{}

func (panicStore) Count(context.Context, nostr.Filter) (int64, error) { panic("store bug") }

func TestHostPanicIsRecoveredAndRuntimeReplaced(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `let calls = 0; module.exports = { accept(e) { calls++; if (e.content === "boom") grasp.store.count({}); return "calls=" + calls } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Store: panicStore{}, Accept: []Spec{acceptSpec("p", "p.js")}})
	run := func(c string) policy.Verdict { return s.Accept(context.Background(), testEvent(1, c), clientMeta()) }
	if v := run("x"); v.Msg != "blocked: calls=1" {
		t.Fatal(v)
	}
	if v := run("boom"); v.Action != policy.Reject || v.Msg != `error: policy plugin "p" failed` {
		t.Fatalf("panic not turned into on_error: %+v", v)
	}
	// The runtime that saw the panic was replaced by a fresh one (its JS state starts over).
	if v := run("x"); v.Msg != "blocked: calls=1" {
		t.Fatalf("runtime not replaced after a panic: %+v", v)
	}
}

func TestTextMatcher(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `const m = grasp.textMatcher(["Casino", "free BTC", ""]); const none = grasp.textMatcher([]);
	module.exports = { accept(e) { if (none.test(e.content)) return "empty list matched"; if (m.test(e.content)) return "hit" } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("p", "p.js")}})
	for content, want := range map[string]string{"CASINO night": "blocked: hit", "get Free btc": "blocked: hit", "a patch": "", "": ""} {
		if v := s.Accept(context.Background(), testEvent(1, content), clientMeta()); v.Msg != want {
			t.Errorf("%q: got %q, want %q", content, v.Msg, want)
		}
	}
}

func TestRateLimitRejectsBadRate(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept(e) { return grasp.ratelimit("k", e.content === "nan" ? undefined : -1) ? undefined : "limited" } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("p", "p.js")}})
	for _, c := range []string{"nan", "neg"} {
		if v := s.Accept(context.Background(), testEvent(1, c), clientMeta()); v.Msg != `error: policy plugin "p" failed` {
			t.Errorf("%s: a bad rate was not an error: %+v", c, v)
		}
	}
}

// G03-7: relay selection sees participants' write relays with reason
// "outbox" and can veto them while keeping the listed ones.
func TestG03_7_SelectionSeesAndVetoesOutboxCandidates(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "nooutbox.js", `module.exports = { selectRelays(c) {
		if (c[0].reason !== "listed" || c[1].reason !== "outbox" || c[1].source !== "outbox") throw new Error("bad input");
		return c.filter(x => x.reason !== "outbox").map(x => x.url);
	} };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, RelaySelection: []Spec{{Name: "nooutbox", File: "nooutbox.js", OnError: OnErrorReject}}})
	in := []relaysync.Candidate{{URL: "wss://listed", Source: relaysync.FromAnnouncement}, {URL: "wss://outbox", Source: relaysync.FromOutbox}}
	got, err := s.SelectRelays(context.Background(), relaysync.RepoInfo{Pubkey: "pk", Identifier: "d", Address: "30617:pk:d"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "wss://listed" {
		t.Fatalf("got %v, want the listed relay only", got)
	}
}

// GRASP-05: relay selection sees whether a repository is an archive
// (ctx.repo.archived), e.g. to sync archived repositories from fewer relays.
func TestG05_SelectRelaysSeesArchivedFlag(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.js", `module.exports = { selectRelays(c, ctx) {
		if (typeof ctx.repo.archived !== "boolean") throw new Error("ctx.repo.archived is " + typeof ctx.repo.archived);
		return ctx.repo.archived ? c.slice(0, 1) : c;
	} };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, RelaySelection: []Spec{{Name: "a", File: "a.js", OnError: OnErrorReject}}})
	for _, c := range []struct {
		archived bool
		want     string
	}{{false, "wss://a wss://b"}, {true, "wss://a"}} {
		got, err := s.SelectRelays(context.Background(), relaysync.RepoInfo{Pubkey: "pk", Identifier: "d", Address: "30617:pk:d", Archived: c.archived}, cands("wss://a", "wss://b"))
		if err != nil || strings.Join(got, " ") != c.want {
			t.Fatalf("archived=%v: got %v %v, want %s", c.archived, got, err, c.want)
		}
	}
}
