package plugins

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"

	"github.com/grasp-dev/grasp/core/relaysync"
	"github.com/grasp-dev/grasp/core/throttle"
)

// probeJS reports every field path of what the host hands each hook, and of
// the globals, between PROBE and EBORP: accept as its rejection message,
// the others as an exception.
const probeJS = `
function paths(o, prefix, out) {
  for (const k of Object.keys(o)) {
    const p = prefix + "." + k;
    out.push(p);
    const v = o[k];
    if (k !== "config" && v !== null && typeof v === "object" && !Array.isArray(v)) paths(v, p, out);
  }
  return out;
}
const report = (o) => "PROBE" + JSON.stringify(o) + "EBORP";
module.exports = {
  accept(event, ctx) {
    return { action: "reject", msg: report({
      accept: paths(event, "event", []).concat(paths(ctx, "ctx", [])),
      globals: paths(grasp, "grasp", []).concat(paths(console, "console", [])),
    }) };
  },
  selectRelays(candidates, ctx) {
    throw new Error(report({ selectRelays: paths(candidates[0], "candidate", []).concat(paths(ctx, "ctx", [])) }));
  },
  throttle(domain, current, ctx) {
    throw new Error(report({ throttle: paths(current, "current", []).concat(paths(ctx, "ctx", [])) }));
  },
};
`

// docSections maps what the probe reports to the heading of the
// docs/plugins.md section that must name it.
var docSections = map[string]string{
	"accept":       "## `accept(event, ctx)`",
	"selectRelays": "## `selectRelays(candidates, ctx)`",
	"throttle":     "## `throttle(domain, current, ctx)`",
	"globals":      "## The `grasp` global",
}

// probeFields runs the probe through a real Set and returns the field paths
// per docSections key.
func probeFields(t *testing.T) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	write(t, dir, "probe.js", probeJS)
	spec := []Spec{{Name: "probe", File: "probe.js", OnError: OnErrorReject}}
	s := mustSet(t, Options{Dir: dir, Accept: spec, RelaySelection: spec, Throttle: spec, Store: &fakeStore{}})
	ctx := context.Background()

	meta := clientMeta()
	meta.Authed = strings.Repeat("ab", 32)
	v := s.Accept(ctx, testEvent(1, "hello"), meta)
	_, selErr := s.SelectRelays(ctx, relaysync.RepoInfo{Pubkey: strings.Repeat("cd", 32), Identifier: "repo", Address: "30617:" + strings.Repeat("cd", 32) + ":repo"},
		[]relaysync.Candidate{{URL: "wss://relay.example", Source: relaysync.FromAnnouncement, Health: relaysync.Health{OK: true, LastOK: t0.Add(-time.Hour)}}})
	_, thrErr := s.Throttle(ctx, "git.example.org", throttle.Limits{Concurrency: 2, PerMinute: 10})
	if selErr == nil || thrErr == nil {
		t.Fatalf("the probe must fail selectRelays and throttle to report: %v, %v", selErr, thrErr)
	}

	out := map[string][]string{}
	for _, text := range []string{v.Msg, selErr.Error(), thrErr.Error()} {
		start, end := strings.Index(text, "PROBE"), strings.Index(text, "EBORP")
		if start < 0 || end < start {
			t.Fatalf("no probe report in %q", text)
		}
		var got map[string][]string
		if err := json.Unmarshal([]byte(text[start+len("PROBE"):end]), &got); err != nil {
			t.Fatalf("probe report %q: %v", text, err)
		}
		for k, paths := range got {
			out[k] = append(out[k], paths...)
		}
	}
	return out
}

// acceptActions are the `action` values accept may return, read from the
// error the host gives for an unknown one, and each checked to be accepted.
func acceptActions(t *testing.T) []string {
	t.Helper()
	vm := goja.New()
	_, err := parseVerdict(vm.ToValue(map[string]any{"action": "no-such-action"}), "probe")
	if err == nil {
		t.Fatal("an unknown action must be a bad return value")
	}
	var actions []string
	for _, m := range regexp.MustCompile(`"([A-Za-z]+)"`).FindAllStringSubmatch(err.Error(), -1) {
		a := m[1]
		if _, err := parseVerdict(vm.ToValue(map[string]any{"action": a}), "probe"); err != nil {
			t.Fatalf("%q, named as an action by %q, is refused: %v", a, err, err)
		}
		actions = append(actions, a)
	}
	if len(actions) < 3 {
		t.Fatalf("found only actions %v in %q", actions, err)
	}
	return actions
}

// section is the text of docs/plugins.md after the line that starts with
// heading, up to the next "## ".
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		return ""
	}
	rest := doc[i+1:]
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[nl:]
	}
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// undocumented lists the probed fields and accept actions that their
// section of the doc does not name in backticks.
func undocumented(doc string, fields map[string][]string, actions []string) []string {
	var missing []string
	for key, heading := range docSections {
		sec := section(doc, heading)
		if sec == "" {
			missing = append(missing, "section "+heading)
			continue
		}
		for _, p := range fields[key] {
			// `ctx.repo.address`, `grasp.kv.get(key)`, `grasp.log` as part of `grasp.log.info`
			if !regexp.MustCompile("`" + regexp.QuoteMeta(p) + "[`(.]").MatchString(sec) {
				missing = append(missing, key+": "+p)
			}
		}
	}
	accept := section(doc, docSections["accept"])
	for _, a := range actions {
		if !strings.Contains(accept, `action: "`+a+`"`) {
			missing = append(missing, `accept: { action: "`+a+`" }`)
		}
	}
	slices.Sort(missing)
	return missing
}

func readPluginDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/plugins.md")
	if err != nil {
		t.Fatalf("read the plugin doc: %v", err)
	}
	return string(b)
}

// TestPluginDocNamesEveryField keeps docs/plugins.md, the contract plugin
// authors write against, complete: every field grasp hands a hook (event,
// ctx, candidates, current), every member of the globals, and every action
// accept may return is named in its section.
func TestPluginDocNamesEveryField(t *testing.T) {
	fields := probeFields(t)
	for _, want := range []string{"event.content", "ctx.source", "ctx.authed", "candidate.health.lastOk", "ctx.repo.address", "current.perMinute", "grasp.kv.set", "grasp.store.count"} {
		found := false
		for _, paths := range fields {
			found = found || slices.Contains(paths, want)
		}
		if !found {
			t.Fatalf("the probe did not see %s: %v", want, fields)
		}
	}
	if missing := undocumented(readPluginDoc(t), fields, acceptActions(t)); len(missing) > 0 {
		t.Fatalf("docs/plugins.md does not name:\n%s", strings.Join(missing, "\n"))
	}
}

// TestPluginDocCheckCatchesAGap proves the check can fail: a field or an
// action dropped from the doc is reported.
func TestPluginDocCheckCatchesAGap(t *testing.T) {
	fields, actions := probeFields(t), acceptActions(t)
	doc := readPluginDoc(t)
	for _, tc := range []struct{ from, to, want string }{
		{"`ctx.authed`", "`ctx.authd`", "accept: ctx.authed"},
		{"`candidate.health.failures`", "`candidate.health.fails`", "selectRelays: candidate.health.failures"},
		{"`grasp.kv.del(", "`grasp.kv.delete(", "globals: grasp.kv.del"},
		{`{ action: "shadowReject"`, `{ action: "shadow"`, `accept: { action: "shadowReject" }`},
	} {
		mutated := strings.Replace(doc, tc.from, tc.to, 1)
		if mutated == doc {
			t.Fatalf("%q is no longer in docs/plugins.md; update the test", tc.from)
		}
		if missing := undocumented(mutated, fields, actions); !slices.Contains(missing, tc.want) {
			t.Errorf("dropping %s: want %q reported, got %v", tc.from, tc.want, missing)
		}
	}
}
