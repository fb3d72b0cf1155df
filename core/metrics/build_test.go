package metrics

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildIdentityFromTheCheckout: a test binary, like `go run`, carries
// no VCS stamp; the identity then comes from the checkout it was compiled
// from, the commit git names as HEAD (issue 26: "(devel)" everywhere).
func TestBuildIdentityFromTheCheckout(t *testing.T) {
	wd, _ := os.Getwd()
	out, err := exec.Command("git", "-C", wd, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not run from a git checkout: %v", err) // a source tarball has no commit to find
	}
	head := strings.TrimSpace(string(out))
	st, _ := exec.Command("git", "-C", wd, "status", "--porcelain", "--untracked-files=no").Output()
	suffix := ""
	if len(strings.TrimSpace(string(st))) > 0 {
		suffix = "-dirty"
	}
	v, c := BuildIdentity("", "")
	if c != head+suffix || v != "devel-"+head[:12]+suffix {
		t.Fatalf("BuildIdentity = %q, %q; want devel-%s%s and %s%s", v, c, head[:12], suffix, head, suffix)
	}
	if v, c := BuildIdentity("v9", "deadbeef"); v != "v9" || c != "deadbeef" {
		t.Fatalf("explicit identity overridden: %q %q", v, c)
	}
}

// TestBuildIdentityWithoutAnything: no stamp and no checkout (a binary
// copied elsewhere, built with -buildvcs=false -trimpath) says so plainly.
func TestBuildIdentityWithoutAnything(t *testing.T) {
	elsewhere := t.TempDir()
	if v, c := identity("", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, []string{elsewhere}); v != "(devel)" || c != "unknown" {
		t.Fatalf("identity with nothing to go on = %q, %q; want (devel), unknown", v, c)
	}
	// A checkout of another module is not taken for grasp's.
	other := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if err := exec.Command("git", append([]string{"-C", other}, args...)...).Run(); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.org/other\n"), 0o644)
	if v, c := identity("", "", nil, []string{filepath.Join(other)}); v != "(devel)" || c != "unknown" {
		t.Fatalf("another module's checkout gave %q, %q", v, c)
	}
	// A stamped build keeps its stamp.
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: strings.Repeat("a", 40)}, {Key: "vcs.modified", Value: "true"}}}
	if v, c := identity("", "", bi, nil); v != "v1.2.3" || c != strings.Repeat("a", 40)+"-dirty" {
		t.Fatalf("stamped build = %q, %q", v, c)
	}
}
