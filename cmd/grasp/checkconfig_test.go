package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/hashicorp/go-hclog"
)

// TestAbuse_F24_MetricsBeyondLoopbackWarned: with metrics.listen on every
// interface /metrics is public; check-config says so (and still passes),
// and so does the start log, which reads the same list.
func TestAbuse_F24_MetricsBeyondLoopbackWarned(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "grasp.toml")
	if err := os.WriteFile(p, []byte("[metrics]\nlisten = \"0.0.0.0:7335\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runGrasp(t, dir, nil, nil, "check-config", "--config", p)
	if code != 0 || out != p+": ok\n" || !strings.Contains(errOut, "warning: metrics.listen: 0.0.0.0:7335 is not a loopback address") {
		t.Fatalf("check-config = %d, stdout %q, stderr %q; want 0 with a metrics.listen warning", code, out, errOut)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logStart(hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true}), cfg, p, "v", "c")
	if !strings.Contains(buf.String(), `"@level":"warn"`) || !strings.Contains(buf.String(), "/metrics (repository, client and relay counts) is served to anyone") {
		t.Fatalf("start log lacks the metrics warning:\n%s", buf.String())
	}
}

// TestCheckConfigWarnsExampleHost: a copied config still naming an
// example host passes with a warning that says what to change (issue 26).
func TestCheckConfigWarnsExampleHost(t *testing.T) {
	code, out, errOut := runGrasp(t, repoRoot, nil, nil, "check-config", "--config", "deploy/grasp.toml")
	if code != 0 || !strings.HasSuffix(out, ": ok\n") || !strings.Contains(errOut, "warning: server.public_url: git.example.com is an example host") {
		t.Fatalf("check-config deploy/grasp.toml = %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestHelpExitsZero: asking a command for help is not an error (issue 26:
// `serve --help` exited 1); the usage goes to stdout.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"serve", "--help"}, {"serve", "-h"}, {"check-config", "--help"}, {"admin", "backup", "--help"}} {
		code, out, errOut := runGrasp(t, t.TempDir(), nil, nil, args...)
		if code != 0 || !strings.Contains(out, "grasp serve [--config FILE]") || errOut != "" {
			t.Errorf("grasp %v = %d, stdout %.60q, stderr %q; want 0 and the usage on stdout", args, code, out, errOut)
		}
	}
}

// TestVersionNamesTheCheckout: run from a checkout without a VCS stamp
// (go run, go test), grasp names the checkout's commit instead of
// "(devel)" (issue 26).
func TestVersionNamesTheCheckout(t *testing.T) {
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err) // a source tarball has no commit to name
	}
	code, out, _ := runGrasp(t, t.TempDir(), nil, nil, "version")
	h := strings.TrimSpace(string(head))
	if code != 0 || !strings.HasPrefix(out, "grasp devel-"+h[:12]) || !strings.Contains(out, "(commit "+h) {
		t.Fatalf("grasp version = %d %q, want devel-%s and commit %s", code, out, h[:12], h)
	}
}
