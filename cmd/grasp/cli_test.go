package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestServeDefaultsLogsListenAddress runs `grasp serve` with no config at
// all: the documented defaults (grasp.toml.example) must give a working
// server on 127.0.0.1:7334 with its data under ./data.
func TestServeDefaultsLogsListenAddress(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:7334", "127.0.0.1:7335"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("this test needs %s (the default listen/metrics address) free, and it is not: %v; "+
				"stop whatever listens there and rerun", addr, err)
		}
		ln.Close()
	}
	dir := t.TempDir()
	p := startProc(t, dir, "serve")
	line := p.waitText(t, 60*time.Second, func(l string) bool { return strings.Contains(l, "grasp listening") })
	for _, want := range []string{"addr=127.0.0.1:7334", "127.0.0.1:7335"} {
		if !strings.Contains(line, want) {
			t.Errorf("listen log line %q lacks %q", line, want)
		}
	}

	code, hdr, body := httpGet(t, "http://127.0.0.1:7334/", map[string]string{"Accept": "application/nostr+json"})
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
	if code, _, _ := httpGet(t, "http://127.0.0.1:7335/metrics", nil); code != 200 {
		t.Errorf("default metrics listener: GET /metrics = %d", code)
	}
	if fi, err := os.Stat(filepath.Join(dir, "data")); err != nil || !fi.IsDir() {
		t.Errorf("default data dir ./data not created in the working directory: %v", err)
	}

	if code := p.stop(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0 (graceful shutdown)", code)
	}
	if !slices.ContainsFunc(p.readLog(), func(l string) bool { return strings.Contains(l, "grasp stopped") }) {
		t.Error("no \"grasp stopped\" log line after SIGTERM")
	}
	// The port is free again once the process is gone.
	ln, err := net.Listen("tcp", "127.0.0.1:7334")
	if err != nil {
		t.Errorf("127.0.0.1:7334 still taken after shutdown: %v", err)
	} else {
		ln.Close()
	}
}
