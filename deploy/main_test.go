package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the module root, where the shipped files and cmd/grasp live.
const repoRoot = ".."

// shared holds what is built once per test binary (the grasp binary, the
// 200 MB repository) and is removed when the tests end.
var shared string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "grasp-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploy tests:", err)
		os.Exit(1)
	}
	shared = dir
	code := m.Run()
	os.RemoveAll(shared)
	os.Exit(code)
}

var graspBuild struct {
	once sync.Once
	path string
	err  error
}

// graspBinary builds `grasp` from this tree once (without -race: it is the
// program an operator runs) and returns its path.
func graspBinary(t testing.TB) string {
	t.Helper()
	graspBuild.once.Do(func() {
		out := filepath.Join(shared, "grasp")
		goBin, err := exec.LookPath("go")
		if err != nil {
			graspBuild.err = fmt.Errorf("the go command is needed to build grasp: %w", err)
			return
		}
		cmd := exec.Command(goBin, "build", "-o", out, "./cmd/grasp")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			graspBuild.err = fmt.Errorf("go build ./cmd/grasp: %v\n%s", err, b)
			return
		}
		graspBuild.path = out
	})
	if graspBuild.err != nil {
		t.Fatal(graspBuild.err)
	}
	return graspBuild.path
}

// needTool finds an external program the test drives. A missing one fails
// the test, naming the Debian package to install, because a skipped test
// would hide an untested deployment; only -short runs may skip.
func needTool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if testing.Short() {
		t.Skipf("%s not installed (Debian package %s); skipped in -short mode", name, debianPackage)
	}
	t.Fatalf("%s not found in PATH: install it with `apt-get install -y %s` (this test runs the shipped deployment files with it)", name, debianPackage)
	return ""
}

// readShipped reads a file of the repository, relative to its root.
func readShipped(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatalf("read shipped file: %v", err)
	}
	return string(b)
}

// render applies each substitution to a shipped file and fails if one does
// not apply: the test must notice when the shipped text it adapts changes.
func render(t testing.TB, name, src string, subs [][2]string) string {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(src, s[0]) {
			t.Fatalf("%s no longer contains %q: update the test's substitutions together with the shipped file", name, s[0])
		}
		src = strings.ReplaceAll(src, s[0], s[1])
	}
	return src
}

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
