package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/grasp-dev/grasp/internal/testkit"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// TestPluginTestCommand runs the documented example:
// grasp plugin test --config examples/custom-policy/grasp.toml < events.jsonl
// with one change: the example's 20 ms plugin timeout runs on the wall
// clock, which a loaded CI machine (and the race detector) can exceed with
// nothing wrong in the policy, so the test stretches it to testwait's bound.
func TestPluginTestCommand(t *testing.T) {
	events, err := os.ReadFile(filepath.Join(repoRoot, "examples/custom-policy/events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// One line that is not an event: it gets its own verdict line too.
	input := string(events) + "\n{not json\n"
	// Blank lines are skipped; verdicts name other lines by their number.
	var lines []string
	var lineNo []int
	for i, l := range strings.Split(input, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
			lineNo = append(lineNo, i+1)
		}
	}
	example, err := os.ReadFile(filepath.Join(repoRoot, "examples/custom-policy/grasp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	const exampleTimeout = `timeout  = "20ms"`
	if !strings.Contains(string(example), exampleTimeout) {
		t.Fatalf("examples/custom-policy/grasp.toml no longer sets %s; update this test", exampleTimeout)
	}
	stretched := filepath.Join(t.TempDir(), "grasp.toml")
	body := strings.Replace(string(example), exampleTimeout, fmt.Sprintf("timeout = %q", testwait.Limit(t)), 1)
	// The copy lives elsewhere: its plugin dir must still name the example's.
	const exampleDir = `dir   = "plugins"`
	if !strings.Contains(body, exampleDir) {
		t.Fatalf("examples/custom-policy/grasp.toml no longer sets %s; update this test", exampleDir)
	}
	pluginDir, err := filepath.Abs(filepath.Join(repoRoot, "examples/custom-policy/plugins"))
	if err != nil {
		t.Fatal(err)
	}
	body = strings.Replace(body, exampleDir, fmt.Sprintf("dir = %q", pluginDir), 1)
	if err := os.WriteFile(stretched, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runGrasp(t, repoRoot, []byte(input), nil, "plugin", "test", "--config", stretched)
	// The malformed line makes the run fail, after every verdict is printed.
	if code != 1 || !strings.Contains(errOut, "1 invalid") {
		t.Fatalf("plugin test exited %d (%s), want 1 naming the invalid line", code, errOut)
	}
	verdicts := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(verdicts) != len(lines) {
		t.Fatalf("%d verdicts for %d input lines:\n%s", len(verdicts), len(lines), out)
	}
	// What the example policy (git_only.js) documents for each event.
	want := map[string]string{
		"0100000000000000000000000000000000000000000000000000000000000000": "accept",                      // an issue
		"0200000000000000000000000000000000000000000000000000000000000000": "reject blocked: this server", // kind 1
		"0400000000000000000000000000000000000000000000000000000000000000": "shadowReject",                // synced from an untrusted relay
		"0500000000000000000000000000000000000000000000000000000000000000": "accept",                      // synced from a trusted relay
	}
	for i, l := range lines {
		v := verdicts[i]
		var probe struct {
			ID    string `json:"id"`
			Event struct {
				ID string `json:"id"`
			} `json:"event"`
		}
		if json.Unmarshal([]byte(l), &probe) != nil {
			if !strings.HasPrefix(v, fmt.Sprintf("line %d: invalid: ", lineNo[i])) {
				t.Errorf("verdict for the malformed line %d = %q, want \"line %d: invalid: ...\"", lineNo[i], v, lineNo[i])
			}
			continue
		}
		id := probe.ID + probe.Event.ID
		if !strings.HasPrefix(v, id+" ") {
			t.Errorf("verdict %d = %q, want it to start with the event id %s", i+1, v, id)
			continue
		}
		if w, ok := want[id]; ok && !strings.HasPrefix(strings.TrimPrefix(v, id+" "), w) {
			t.Errorf("verdict for %s = %q, want %q...", id[:4], v, w)
		}
	}

	// A plugin that does not compile fails the command, naming the file.
	dir := t.TempDir()
	broken := writePolicy(t, dir, "module.exports = { accept(event { }")
	code, _, errOut = runGrasp(t, dir, []byte(string(events)), nil, "plugin", "test", "--config", broken)
	if code == 0 || !strings.Contains(errOut, "gate.js") {
		t.Errorf("plugin test with a broken plugin = %d %q, want non-zero naming gate.js", code, errOut)
	}
	code, _, errOut = runGrasp(t, dir, nil, nil, "check-config", "--config", broken)
	if code == 0 || !strings.Contains(errOut, "gate.js") {
		t.Errorf("check-config with a broken plugin = %d %q, want non-zero naming gate.js", code, errOut)
	}
}

// TestPluginTestReportsFailures: `grasp plugin test` prints a failing
// plugin's JavaScript error at the position an editor shows (the first line
// and lines with multi-byte characters included), exits 1 when a plugin
// fails, a line does not parse or no plugin of the hook is configured, 0
// when every line ran clean; relay_selection and throttle chains run too.
func TestPluginTestReportsFailures(t *testing.T) {
	event := `{"id":"01","pubkey":"aa","created_at":1,"kind":1,"tags":[],"content":"","sig":"ff"}` + "\n"
	cases := []struct {
		name, js   string
		wantCode   int
		wantOut    []string
		wantErrOut string
	}{{
		name: "throw on the first line",
		// ctx.nope is undefined: reading .x fails at "nope", column 67.
		js:       `module.exports = { accept(event, ctx) { if (event.kind === 1) ctx.nope.x(); } };`,
		wantCode: 1,
		wantOut: []string{`01 reject error: policy plugin "gate" failed`,
			`line 1: plugins.accept "gate" failed: exception: TypeError: Cannot read property 'x' of undefined or null`,
			`gate.js:1:67)`},
		wantErrOut: "1 with a failing plugin",
	}, {
		name:     "throw after a multi-byte character",
		js:       "module.exports = {\n  accept(event, ctx) {\n    const s = \"caf\u00e9 \u2014 ok\"; throw new Error(\"boom \" + s);\n  },\n};\n",
		wantCode: 1,
		// "throw new Error": goja points at "new", character 34 of line 3
		// (byte 36: é and — are multi-byte).
		wantOut:    []string{"Error: boom caf\u00e9 \u2014 ok", "gate.js:3:34)"},
		wantErrOut: "with a failing plugin",
	}, {
		name:       "syntax error",
		js:         "module.exports = { accept(event { } };\n",
		wantCode:   1,
		wantErrOut: "gate.js: Line 1:33 Unexpected token {",
	}, {
		name:     "clean run",
		js:       `module.exports = { accept(event) { if (event.kind === 1) return "no notes"; } };`,
		wantCode: 0,
		wantOut:  []string{"01 reject blocked: no notes"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writePolicy(t, dir, c.js)
			code, out, errOut := runGrasp(t, dir, []byte(event), nil, "plugin", "test", "--config", cfg)
			if code != c.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.wantCode, out, errOut)
			}
			for _, w := range c.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(errOut, c.wantErrOut) {
				t.Errorf("stderr lacks %q:\n%s", c.wantErrOut, errOut)
			}
		})
	}

	t.Run("no accept plugins", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "empty.toml")
		if err := os.WriteFile(cfg, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runGrasp(t, dir, []byte(event), nil, "plugin", "test", "--config", cfg)
		if code != 1 || !strings.Contains(errOut, "no [[plugins.accept]] configured") {
			t.Errorf("exit %d %q, want 1 saying no accept plugins are configured", code, errOut)
		}
	})

	t.Run("relay_selection and throttle", func(t *testing.T) {
		dir := t.TempDir()
		pdir := filepath.Join(dir, "plugins")
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		js := `module.exports = {
  selectRelays(cands) { return cands.filter(c => c.health.ok).map(c => c.url); },
  throttle(domain, cur) { if (domain === "github.com") return { perMinute: cur.perMinute * 2 }; },
};
`
		if err := os.WriteFile(filepath.Join(pdir, "net.js"), []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "net.toml")
		body := "[plugins]\ndir = \"plugins\"\n\n[[plugins.relay_selection]]\nname = \"healthy\"\nfile = \"net.js\"\n\n[[plugins.throttle]]\nname = \"forge\"\nfile = \"net.js\"\n"
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// The config names its plugin dir relative to itself; the command
		// runs elsewhere.
		cwd := t.TempDir()
		sel := `{"repo":{"pubkey":"aa","identifier":"r"},"candidates":[{"url":"wss://a.example","health":{"ok":true}},{"url":"wss://b.example","health":{"ok":false}}]}` + "\n"
		code, out, errOut := runGrasp(t, cwd, []byte(sel), nil, "plugin", "test", "--hook", "relay_selection", "--config", cfg)
		if code != 0 || out != "30617:aa:r wss://a.example\n" {
			t.Errorf("relay_selection: exit %d, stdout %q, stderr %q; want 0 and the healthy relay", code, out, errOut)
		}
		thr := `{"domain":"github.com","concurrency":2,"perMinute":30}` + "\n" + `{"domain":"git.example","concurrency":2,"perMinute":30}` + "\n"
		code, out, errOut = runGrasp(t, cwd, []byte(thr), nil, "plugin", "test", "--hook", "throttle", "--config", cfg)
		if code != 0 || out != "github.com concurrency=2 perMinute=60\ngit.example concurrency=2 perMinute=30\n" {
			t.Errorf("throttle: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		code, _, errOut = runGrasp(t, cwd, []byte(event), nil, "plugin", "test", "--config", cfg)
		if code != 1 || !strings.Contains(errOut, "no [[plugins.accept]] configured") {
			t.Errorf("accept with only other hooks: exit %d %q", code, errOut)
		}
	})
}

// writePolicy writes plugins/gate.js under dir and a config that makes it
// the accept chain; it returns the config path. (Its default timeout runs
// on the wall clock: only compile errors matter to its callers.)
func writePolicy(t *testing.T, dir, js string) string {
	t.Helper()
	pdir := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "gate.js"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "policy.toml")
	body := fmt.Sprintf("[plugins]\ndir = %q\n\n[[plugins.accept]]\nname = \"gate\"\nfile = \"gate.js\"\n", pdir)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

const (
	policyV1 = `module.exports = {
  accept(event, ctx) {
    if (event.kind === 10317) return "blocked: v1 refuses grasp lists";
  },
};
`
	policyV2 = `module.exports = {
  accept(event, ctx) {
    if (event.content.includes("forbidden")) return "blocked: v2 refuses forbidden words";
  },
};
`
	policyBroken = `module.exports = {
  accept(event, ctx) {
    if (event.kind === 10317 return "blocked: never compiles";
  },
};
`
)

// TestSIGHUPReloadsPlugins: SIGHUP swaps in the edited accept plugin; a
// plugin that does not compile leaves the running policy in place.
func TestSIGHUPReloadsPlugins(t *testing.T) {
	pdir := filepath.Join(t.TempDir(), "plugins")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(pdir, "gate.js")
	write := func(js string) {
		t.Helper()
		if err := os.WriteFile(gate, []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(policyV1)
	// watch = false: only the signal may trigger the reload under test. The
	// plugin timeout runs on the wall clock of a loaded machine: testwait's
	// bound, not the 50 ms default, so that only the policy decides.
	in := newInstance(t, fmt.Sprintf("[plugins]\ndir = %q\nwatch = false\n\n[[plugins.accept]]\nname = \"gate\"\nfile = \"gate.js\"\ntimeout = %q\n", pdir, testwait.Limit(t)))
	p := startServer(t, in)

	expect := func(when, content string, wantOK bool, wantMsg string) {
		t.Helper()
		ok, msg := publishOK(t, in.Relay(), graspList(t, newKey(t), in, content))
		if ok != wantOK || msg != wantMsg {
			t.Errorf("%s: grasp list %q: OK %v %q, want %v %q", when, content, ok, msg, wantOK, wantMsg)
		}
	}
	expect("policy v1", "hello", false, "blocked: v1 refuses grasp lists")

	write(policyV2)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, func(m logLine) bool { return m.Msg() == "reload: plugins swapped" })
	expect("policy v2", "hello", true, "")
	expect("policy v2", "forbidden words", false, "blocked: v2 refuses forbidden words")

	write(policyBroken)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	rec := p.waitLog(t, func(m logLine) bool {
		return m.Msg() == "reload: plugins rejected; keeping the running set"
	})
	if !strings.Contains(rec.Str("error"), "gate.js") {
		t.Errorf("rejected reload does not name the broken file: %v", rec)
	}
	// One reload, one error line: the plugin host leaves the logging to
	// the caller (issue 16 part 4: no doubled reload errors).
	var errorLines []string
	for _, m := range p.records() {
		if m.Str("@level") == "error" {
			errorLines = append(errorLines, m.Msg())
		}
	}
	if len(errorLines) != 1 {
		t.Errorf("the rejected reload logged %d error lines, want 1: %q", len(errorLines), errorLines)
	}
	expect("after a broken reload", "hello", true, "")
	expect("after a broken reload", "forbidden words", false, "blocked: v2 refuses forbidden words")

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
}

// Plugin metrics reach /metrics of a running `grasp serve`: the plugin host
// reports into the process registry, which is built before the plugins.
func TestServeExportsPluginMetrics(t *testing.T) {
	pdir := filepath.Join(t.TempDir(), "plugins")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "gate.js"), []byte(policyV1), 0o644); err != nil {
		t.Fatal(err)
	}
	metricsPort := testkit.FreePort(t)
	in := newInstance(t, fmt.Sprintf("[metrics]\nenabled = true\nlisten = \"127.0.0.1:%d\"\n\n[plugins]\ndir = %q\nwatch = false\n\n[[plugins.accept]]\nname = \"gate\"\nfile = \"gate.js\"\n", metricsPort, pdir))
	startServer(t, in)
	// one call of the accept plugin
	if ok, msg := publishOK(t, in.Relay(), graspList(t, newKey(t), in, "hello")); ok || msg != "blocked: v1 refuses grasp lists" {
		t.Fatalf("grasp list: OK %v %q, want the plugin's refusal", ok, msg)
	}
	code, _, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort), nil)
	if code != 200 {
		t.Fatalf("GET /metrics = %d", code)
	}
	want := `grasp_plugin_call_seconds_count{hook="accept",plugin="gate"} 1`
	if !strings.Contains(string(body), want) {
		t.Fatalf("/metrics lacks %q; plugin lines:\n%s", want, grepLines(string(body), "grasp_plugin"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestScriptsExportAndStockConfigCheck: `grasp scripts export DIR` writes
// the stock plugins (and refuses to overwrite them); check-config then
// refuses a stock plugin's config table holding a string where the plugin
// reads a list, or a key it does not read, at the key's file:line:col.
func TestScriptsExportAndStockConfigCheck(t *testing.T) {
	dir := t.TempDir()
	pdir := filepath.Join(dir, "plugins")
	code, out, errOut := runGrasp(t, dir, nil, nil, "scripts", "export", pdir)
	if code != 0 || !strings.Contains(out, filepath.Join(pdir, "spam_words.js")) {
		t.Fatalf("scripts export = %d, stdout %q, stderr %q", code, out, errOut)
	}
	stock, err := os.ReadFile(filepath.Join(repoRoot, "scripts", "spam_words.js"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(pdir, "spam_words.js")); err != nil || string(got) != string(stock) {
		t.Fatalf("exported spam_words.js differs from scripts/spam_words.js (%v)", err)
	}
	if code, _, errOut := runGrasp(t, dir, nil, nil, "scripts", "export", pdir); code == 0 || !strings.Contains(errOut, "file exists") {
		t.Errorf("a second export = %d %q, want a refusal to overwrite", code, errOut)
	}

	cfg := filepath.Join(dir, "grasp.toml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[plugins]\ndir = \"plugins\"\n\n[[plugins.accept]]\nname = \"spam\"\nfile = \"spam_words.js\"\nconfig = { words = [\"casino\"] }\n")
	if code, out, errOut := runGrasp(t, t.TempDir(), nil, nil, "check-config", "--config", cfg); code != 0 {
		t.Fatalf("check-config of a good stock config = %d %q %q", code, out, errOut)
	}
	write("[plugins]\ndir = \"plugins\"\n\n[[plugins.accept]]\nname = \"spam\"\nfile = \"spam_words.js\"\nconfig = { words = \"casino\" }\n\n[[plugins.throttle]]\nname = \"forges\"\nfile = \"forge_throttle.js\"\n  [plugins.throttle.config]\n  big_forge = [\"github.com\"]\n")
	code, _, errOut = runGrasp(t, t.TempDir(), nil, nil, "check-config", "--config", cfg)
	want := []string{
		cfg + ":7:12: plugins.accept[0].config.words: want a list of strings, got a string",
		cfg + `:13:3: plugins.throttle[0].config.big_forge: forge_throttle.js reads no key "big_forge"`,
	}
	if code != 1 || strings.TrimSpace(errOut) != strings.Join(want, "\n") {
		t.Errorf("check-config = %d\n%s\nwant 1 and\n%s", code, errOut, strings.Join(want, "\n"))
	}
}
