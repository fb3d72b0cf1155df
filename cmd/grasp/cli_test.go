package main

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
)

// repoRoot is where the example configs resolve their relative paths.
const repoRoot = "../.."

func TestVersionAndUsage(t *testing.T) {
	dir := t.TempDir()

	code, out, _ := runGrasp(t, dir, nil, nil, "version")
	if code != 0 || !regexp.MustCompile(`^grasp \S+ \(commit \S+\)\n$`).MatchString(out) {
		t.Errorf("grasp version = %d %q, want 0 and \"grasp <version> (commit <commit>)\"", code, out)
	}

	// What a release build sets with -ldflags -X main.version=... -X main.commit=...
	code, out, _ = runGrasp(t, dir, nil, []string{versionEnv + "=v1.4.2", commitEnv + "=0123abcd"}, "version")
	if code != 0 || out != "grasp v1.4.2 (commit 0123abcd)\n" {
		t.Errorf("grasp version with build values = %d %q", code, out)
	}

	code, out, errOut := runGrasp(t, dir, nil, nil, "frobnicate")
	if code != 2 {
		t.Errorf("unknown command exit code = %d, want 2", code)
	}
	if out != "" || !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "usage:") {
		t.Errorf("unknown command: stdout %q, stderr %q; want the error and usage on stderr only", out, errOut)
	}

	if code, _, errOut = runGrasp(t, dir, nil, nil); code != 2 || !strings.Contains(errOut, "grasp serve") {
		t.Errorf("no command = %d %q, want 2 and usage", code, errOut)
	}
	if code, _, errOut = runGrasp(t, dir, nil, nil, "plugin", "frob"); code != 2 || !strings.Contains(errOut, "usage:") {
		t.Errorf("grasp plugin frob = %d %q, want 2 and usage", code, errOut)
	}
}

func TestCheckConfigReportsKeyLineColumn(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	// line 3: a typo in a key; line 7 (indented two): a duration in words.
	body := `[server]
listen = "127.0.0.1:7334"
listn = "127.0.0.1:7335"

[purgatory]
sweep_interval = "1m"
  ttl = "30 minutes"
`
	if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runGrasp(t, dir, nil, nil, "check-config", "--config", bad)
	if code == 0 {
		t.Fatalf("check-config of a bad file exited 0; stdout %q", out)
	}
	if strings.Contains(out, "ok") {
		t.Errorf("a bad config printed %q on stdout", out)
	}
	for _, want := range []string{
		regexp.QuoteMeta(bad+":3:1: server.listn: ") + ".*unknown",
		regexp.QuoteMeta(bad+":7:3: purgatory.ttl: ") + ".*duration",
	} {
		if !regexp.MustCompile("(?m)^" + want).MatchString(errOut) {
			t.Errorf("check-config output lacks /%s/:\n%s", want, errOut)
		}
	}

	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("[server]\nlisten = \"127.0.0.1:7334\"\n\n[purgatory]\nttl = \"30m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runGrasp(t, dir, nil, nil, "check-config", "--config", good)
	if code != 0 || out != good+": ok\n" {
		t.Errorf("check-config of a valid file = %d, stdout %q, stderr %q; want 0 and %q", code, out, errOut, good+": ok")
	}

	// The shipped examples are configs users copy: they must pass, plugins and all.
	for _, ex := range []string{"examples/grasp.toml", "examples/custom-policy/grasp.toml", "grasp.toml.example"} {
		code, out, errOut = runGrasp(t, repoRoot, nil, nil, "check-config", "--config", ex)
		if code != 0 || out != ex+": ok\n" {
			t.Errorf("check-config %s = %d, stdout %q, stderr %q", ex, code, out, errOut)
		}
	}

	if code, _, errOut = runGrasp(t, dir, nil, nil, "check-config", "--config", filepath.Join(dir, "missing.toml")); code == 0 || !strings.Contains(errOut, "missing.toml") {
		t.Errorf("check-config of a missing file = %d %q, want non-zero naming the file", code, errOut)
	}
}

// TestServeDefaultsLogsListenAddress: `grasp serve` with no config runs the
// documented defaults (grasp.toml.example, kept equal to config.Default by
// core/config's tests), which listen on 127.0.0.1:7334 with metrics on
// 127.0.0.1:7335 and keep their data under ./data. That is asserted on the
// config serve uses, without binding those ports: two checkouts running CI
// side by side must not fight over them. The process then runs those same
// defaults with only the two listen ports left to the kernel, and must give
// a working server whose log line says where it listens.
func TestServeDefaultsLogsListenAddress(t *testing.T) {
	cfg, path, ok := loadConfig("serve", nil, io.Discard)
	// The defaults, with their paths resolved once against the working
	// directory (issue 26: a relative data_dir broke backups).
	want := config.Default()
	if err := want.Absolute(); err != nil {
		t.Fatal(err)
	}
	if !ok || path != "" || !reflect.DeepEqual(cfg, want) {
		t.Fatalf("serve without --config: ok %v, path %q; want the built-in defaults", ok, path)
	}
	data, _ := filepath.Abs("data")
	if cfg.Server.Listen != "127.0.0.1:7334" || cfg.Server.PublicURL != "http://127.0.0.1:7334" ||
		!cfg.Metrics.Enabled || cfg.Metrics.Listen != "127.0.0.1:7335" || cfg.Server.DataDir != data {
		t.Errorf("defaults: listen %q, public_url %q, metrics %v on %q, data_dir %q; want 127.0.0.1:7334, http://127.0.0.1:7334, metrics on 127.0.0.1:7335, %s (./data)",
			cfg.Server.Listen, cfg.Server.PublicURL, cfg.Metrics.Enabled, cfg.Metrics.Listen, cfg.Server.DataDir, data)
	}

	dir := t.TempDir()
	ports := "[server]\nlisten = \"127.0.0.1:0\"\n\n[metrics]\nlisten = \"127.0.0.1:0\"\n"
	if err := os.WriteFile(filepath.Join(dir, "grasp.toml"), []byte(ports), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, dir, "serve", "--config", "grasp.toml")
	line := p.waitText(t, func(l string) bool { return strings.Contains(l, "grasp listening") })
	reported := func(key string) string {
		m := regexp.MustCompile(`\b` + key + `=(127\.0\.0\.1:[1-9][0-9]*)\b`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("listen log line %q does not say where %s is (%s=127.0.0.1:<port>)", line, key, key)
		}
		return m[1]
	}
	addr, metrics := reported("addr"), reported("metrics")

	code, hdr, body := httpGet(t, "http://"+addr+"/", map[string]string{"Accept": "application/nostr+json"})
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/nostr+json") {
		t.Fatalf("NIP-11: status %d, content-type %q", code, hdr.Get("Content-Type"))
	}
	var info struct {
		SupportedGrasps []string `json:"supported_grasps"`
		SupportedNIPs   []any    `json:"supported_nips"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatalf("NIP-11 document: %v\n%s", err, body)
	}
	if !slices.Contains(info.SupportedGrasps, "GRASP-01") {
		t.Errorf("NIP-11 supported_grasps = %v, want GRASP-01 in it", info.SupportedGrasps)
	}
	if code, _, _ := httpGet(t, "http://"+metrics+"/metrics", nil); code != 200 {
		t.Errorf("default metrics listener: GET /metrics = %d", code)
	}
	if fi, err := os.Stat(filepath.Join(dir, "data")); err != nil || !fi.IsDir() {
		t.Errorf("default data dir ./data not created in the working directory: %v", err)
	}

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0 (graceful shutdown)", code)
	}
	if !slices.ContainsFunc(p.readLog(), func(l string) bool { return strings.Contains(l, "grasp stopped") }) {
		t.Error("no \"grasp stopped\" log line after SIGTERM")
	}
	// The port is free again once the process is gone.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("%s still taken after shutdown: %v", addr, err)
	} else {
		ln.Close()
	}
}
