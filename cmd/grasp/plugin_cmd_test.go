package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
	if err := os.WriteFile(stretched, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runGrasp(t, repoRoot, []byte(input), nil, "plugin", "test", "--config", stretched)
	if code != 0 {
		t.Fatalf("plugin test exited %d: %s", code, errOut)
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
	metricsPort := freePort(t)
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
