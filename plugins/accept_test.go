package plugins

import (
	"context"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testlog"
	"github.com/grasp-dev/grasp/internal/testwait"
)

func TestAcceptReturnConventions(t *testing.T) {
	cases := []struct {
		name, body string
		action     policy.Action
		msg        string
	}{
		{"undefined", `return undefined`, policy.Accept, ""},
		{"null", `return null`, policy.Accept, ""},
		{"explicit accept", `return {action: "accept"}`, policy.Accept, ""},
		{"bare string gets blocked prefix", `return "no spam here"`, policy.Reject, "blocked: no spam here"},
		{"prefixed string kept", `return "rate-limited: slow down"`, policy.Reject, "rate-limited: slow down"},
		{"restricted kept", `return "restricted: members only"`, policy.Reject, "restricted: members only"},
		{"reject object", `return {action: "reject", msg: "bad kind"}`, policy.Reject, "blocked: bad kind"},
		{"reject object without msg", `return {action: "reject"}`, policy.Reject, `blocked: rejected by policy "p"`},
		{"empty string", `return ""`, policy.Reject, `blocked: rejected by policy "p"`},
		{"shadowReject", `return {action: "shadowReject"}`, policy.ShadowReject, ""},
		{"async string", `return (async () => "invalid: nope")()`, policy.Reject, "invalid: nope"},
		{"async undefined", `return (async () => {})()`, policy.Accept, ""},
		{"number is malformed: fail closed", `return 42`, policy.Reject, `error: policy plugin "p" failed`},
		{"unknown action: fail closed", `return {action: "drop"}`, policy.Reject, `error: policy plugin "p" failed`},
		{"non-string msg: fail closed", `return {action: "reject", msg: 7}`, policy.Reject, `error: policy plugin "p" failed`},
		{"rejected promise: fail closed", `return Promise.reject(new Error("x"))`, policy.Reject, `error: policy plugin "p" failed`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "p.js", "module.exports = { accept(event, ctx) { "+c.body+" } };")
			s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("p", "p.js")}})
			v := s.Accept(context.Background(), testEvent(1, "hi"), clientMeta())
			if v.Action != c.action || v.Msg != c.msg {
				t.Fatalf("got %v %q, want %v %q", v.Action, v.Msg, c.action, c.msg)
			}
		})
	}
}

func TestChainOrderFirstRejectWins(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.js", `module.exports = { accept(e) { grasp.kv.set("called", true) } };`)
	write(t, dir, "b.js", `module.exports = { accept(e) { grasp.kv.set("called", true); return "from b" } };`)
	write(t, dir, "c.js", `module.exports = { accept(e) { grasp.kv.set("called", true); return "from c" } };`)
	for _, order := range [][]string{{"a", "b", "c"}, {"a", "c", "b"}} {
		specs := make([]Spec, len(order))
		for i, n := range order {
			specs[i] = acceptSpec(n, n+".js")
		}
		s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: specs})
		v := s.Accept(context.Background(), testEvent(1, ""), clientMeta())
		if want := "blocked: from " + order[1]; v.Action != policy.Reject || v.Msg != want {
			t.Fatalf("order %v: got %v %q, want %q", order, v.Action, v.Msg, want)
		}
		if _, called := s.shared.get(order[2] + "\x00called"); called {
			t.Fatalf("order %v: plugin %s ran after the first reject", order, order[2])
		}
		if _, called := s.shared.get("a\x00called"); !called {
			t.Fatalf("order %v: plugin a did not run", order)
		}
	}
}

func TestAcceptSeesEventCtxAndConfig(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept(e, ctx) {
		const got = [e.id.length, e.pubkey.slice(0,2), e.created_at, e.kind, e.tags.length, e.tags[1][0], e.content, e.sig,
			ctx.source, ctx.remote, ctx.authed, ctx.receivedAt, ctx.config.words.join("+"), ctx.config.limit, grasp.domain].join("|");
		return "restricted: " + got;
	} };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Domain: "git.example.com", Accept: []Spec{{
		Name: "p", File: "p.js", Config: map[string]any{"words": []any{"x", "y"}, "limit": int64(3)},
	}}})
	meta := clientMeta()
	meta.Authed = "bb"
	v := s.Accept(context.Background(), testEvent(30617, "hello"), meta)
	want := "restricted: 64|aa|1767323045|30617|3|clone|hello|ff|client|203.0.113.7|bb|1767323045|x+y|3|git.example.com"
	if v.Msg != want {
		t.Fatalf("got  %q\nwant %q", v.Msg, want)
	}
}

func TestAcceptEventIsACopy(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "m.js", `module.exports = { accept(e) { e.kind = 1; e.content = "x"; e.tags[0][1] = "evil"; e.tags.push(["p","q"]); } };`)
	write(t, dir, "r.js", `module.exports = { accept(e) { } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("m", "m.js"), acceptSpec("r", "r.js")}})
	evt := testEvent(30617, "orig")
	s.Accept(context.Background(), evt, clientMeta())
	if evt.Kind != 30617 || evt.Content != "orig" || evt.Tags[0][1] != "repo" || len(evt.Tags) != 3 {
		t.Fatalf("JS mutation reached the Go event: %+v", evt)
	}
}

func TestRunawayScriptTimesOut(t *testing.T) {
	for _, c := range []struct {
		onError string
		want    policy.Verdict
	}{
		{OnErrorReject, policy.Verdict{Action: policy.Reject, Msg: `error: policy plugin "loop" failed`}},
		{OnErrorSkip, policy.Verdict{Action: policy.Reject, Msg: "blocked: second plugin ran"}},
	} {
		t.Run(c.onError, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "loop.js", `module.exports = { accept(e) { if (e.content === "loop") { for(;;){} } } };`)
			write(t, dir, "next.js", `module.exports = { accept(e) { return "second plugin ran" } };`)
			clk := clock.NewFake(t0)
			var logs testlog.Buffer
			s := mustSet(t, Options{Dir: dir, PoolSize: 1, Clock: clk, Logger: testLogger(&logs), Accept: []Spec{
				{Name: "loop", File: "loop.js", OnError: c.onError}, acceptSpec("next", "next.js"),
			}})
			ch := runAsync(s, testEvent(1, "loop"))
			if !clk.BlockUntil(1, testwait.Limit(t)) {
				t.Fatal("the call never armed its deadline")
			}
			clk.Advance(DefaultAcceptTimeout)
			if v := waitVerdict(t, ch); v != c.want {
				t.Fatalf("got %+v, want %+v", v, c.want)
			}
			if !strings.Contains(logs.String(), "kind=timeout") {
				t.Fatalf("timeout not logged: %s", logs.String())
			}
			// The runtime went back to the pool clean: the next event runs normally.
			v := s.Accept(context.Background(), testEvent(1, "fine"), clientMeta())
			if v.Msg != "blocked: second plugin ran" {
				t.Fatalf("runtime not reusable after an interrupt: %+v", v)
			}
			if clk.Pending() != 0 {
				t.Fatalf("%d timers left armed", clk.Pending())
			}
		})
	}
}

func TestCanceledContextInterrupts(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "loop.js", `module.exports = { accept(e) { for(;;){} } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Clock: clock.NewFake(t0), Accept: []Spec{acceptSpec("loop", "loop.js")}})
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan policy.Verdict, 1)
	go func() { ch <- s.Accept(ctx, testEvent(1, ""), clientMeta()) }()
	cancel()
	if v := waitVerdict(t, ch); v.Action != policy.Reject || !strings.HasPrefix(v.Msg, "error:") {
		t.Fatalf("got %+v", v)
	}
}

func TestThrowingPluginFailsClosedAndLogsStack(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "throw.js", "function helper(){ throw new Error(\"kaboom\") }\nmodule.exports = { accept(e) { helper() } };")
	var logs testlog.Buffer
	clk := clock.NewFake(t0)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Clock: clk, Logger: testLogger(&logs), Accept: []Spec{acceptSpec("throw", "throw.js")}})
	for i := 0; i < 5; i++ {
		v := s.Accept(context.Background(), testEvent(1, ""), clientMeta())
		if v.Action != policy.Reject || v.Msg != `error: policy plugin "throw" failed` {
			t.Fatalf("got %+v", v)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "kaboom") || !strings.Contains(out, "helper") || !strings.Contains(out, "throw.js:1") {
		t.Fatalf("log lacks the JS error and stack: %s", out)
	}
	if !strings.Contains(out, "plugin.throw") {
		t.Fatalf("log not under plugin.<name>: %s", out)
	}
	if n := strings.Count(out, "plugin call failed"); n != 1 {
		t.Fatalf("%d error lines for 5 failures in one window, want 1 (rate-limited)", n)
	}
	clk.Advance(errLogEvery)
	s.Accept(context.Background(), testEvent(1, ""), clientMeta())
	if out := logs.String(); !strings.Contains(out, "suppressed=4") {
		t.Fatalf("suppressed count not reported: %s", out)
	}
}

func TestSkipOnErrorFailsOpen(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "throw.js", `module.exports = { accept(e) { null.x } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{{Name: "t", File: "throw.js", OnError: OnErrorSkip}}})
	if v := s.Accept(context.Background(), testEvent(1, ""), clientMeta()); v.Action != policy.Accept {
		t.Fatalf("got %+v", v)
	}
}

func TestStackOverflowIsAnError(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rec.js", `function r(n){ return r(n+1)+1 } module.exports = { accept(e) { r(0) } };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("rec", "rec.js")}})
	if v := s.Accept(context.Background(), testEvent(1, ""), clientMeta()); v.Action != policy.Reject {
		t.Fatalf("got %+v", v)
	}
}

func TestNoPluginsAcceptsEverything(t *testing.T) {
	s := mustSet(t, Options{})
	if v := s.Accept(context.Background(), testEvent(1, ""), clientMeta()); v.Action != policy.Accept {
		t.Fatalf("got %+v", v)
	}
}

// GRASP-05: an accept plugin sees whether the rules take an announcement
// as an archive (ctx.archived), so it can keep repositories out of it;
// every other event reads false.
func TestG05_AcceptSeesArchivedFlag(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.js", `module.exports = { accept(e, ctx) {
		if (typeof ctx.archived !== "boolean") return "error: ctx.archived is " + typeof ctx.archived;
		if (ctx.archived) return "restricted: not archived here";
	} };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("a", "a.js")}})
	meta := clientMeta()
	if v := s.Accept(context.Background(), testEvent(30617, ""), meta); v.Action != policy.Accept {
		t.Fatalf("not archived: %v %q", v.Action, v.Msg)
	}
	meta.Archived = true
	if v := s.Accept(context.Background(), testEvent(30617, ""), meta); v.Action != policy.Reject || v.Msg != "restricted: not archived here" {
		t.Fatalf("archived: %v %q", v.Action, v.Msg)
	}
}

// Issue 12 part 4: ctx.usage carries what the author's /prs/ npub and the
// client's address hold as placeholders, with the limits; null when grasp
// gives none (releases, plugin test).
func TestAcceptSeesPlaceholderUsage(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "p.js", `module.exports = { accept(e, ctx) {
		if (ctx.usage === null) return "restricted: no usage";
		const u = ctx.usage;
		return "restricted: " + [u.pubkey.placeholders, u.pubkey.bytes, u.ip.placeholders, u.ip.bytes,
			u.limits.placeholdersPerPubkey, u.limits.placeholdersPerIp, u.limits.bytesPerPubkey, u.limits.bytesPerIp].join("|");
	} };`)
	s := mustSet(t, Options{Dir: dir, PoolSize: 1, Accept: []Spec{acceptSpec("p", "p.js")}})
	meta := clientMeta()
	meta.Usage = &policy.Usage{
		Pubkey: policy.Use{Placeholders: 2, Bytes: 3000},
		IP:     policy.Use{Placeholders: 5, Bytes: 7000},
		Limits: policy.UsageLimits{PlaceholdersPerPubkey: 200, PlaceholdersPerIP: 20, BytesPerPubkey: 500 << 20, BytesPerIP: 100 << 20},
	}
	v := s.Accept(context.Background(), testEvent(1618, ""), meta)
	if want := "restricted: 2|3000|5|7000|200|20|524288000|104857600"; v.Msg != want {
		t.Fatalf("got %q, want %q", v.Msg, want)
	}
	if v := s.Accept(context.Background(), testEvent(1618, ""), clientMeta()); v.Msg != "restricted: no usage" {
		t.Fatalf("without usage: %q", v.Msg)
	}
}
