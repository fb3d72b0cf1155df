package metrics

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// BuildIdentity is the one answer to "which build is this": an explicit
// version or commit (what a release stamps with -ldflags -X) wins, a
// missing one is taken from debug.ReadBuildInfo, which `go build` fills
// with the module version and VCS revision. `go run`, `go test` and
// -buildvcs=false stamp no revision (issue 26: `go run ./cmd/grasp serve`
// said "(devel)" everywhere), so the commit is then read from the git
// checkout the binary was compiled from, when that is on this machine. An
// unversioned build with a known commit reads "devel-<12 hex>" (with
// "-dirty" when the checkout has uncommitted changes, which the commit
// then carries too); with no commit at all, "(devel)" (Go's own word) and
// "unknown". `grasp version` prints it, the start log, NIP-11, the pages
// and grasp_build_info carry it.
func BuildIdentity(version, commit string) (string, string) {
	bi, _ := debug.ReadBuildInfo()
	return identity(version, commit, bi, sourceDirs())
}

// identity is BuildIdentity over bi and the directories dirs, where a
// checkout is looked for when bi names no revision.
func identity(version, commit string, bi *debug.BuildInfo, dirs []string) (string, string) {
	dirty := false
	if bi != nil {
		if version == "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		if commit == "" {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
		}
	}
	if commit == "" {
		commit, dirty = checkoutCommit(dirs)
	}
	suffix := ""
	if commit != "" && dirty {
		suffix = "-dirty"
	}
	switch {
	case version != "":
	case commit != "":
		version = "devel-" + commit[:min(12, len(commit))] + suffix
	default:
		version = "(devel)"
	}
	if commit == "" {
		commit = "unknown"
	}
	commit += suffix
	return version, commit
}

// sourceDirs are where this binary's checkout may be: the directory this
// file was compiled from (absolute unless built with -trimpath), then the
// working directory, from which `go run ./cmd/grasp` is typed.
func sourceDirs() []string {
	var dirs []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dirs = append(dirs, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	return dirs
}

// modulePath is grasp's module: a checkout is only taken for this
// binary's when its go.mod names it.
const modulePath = "github.com/grasp-dev/grasp"

// checkoutCommit is HEAD of the first grasp checkout found at or above one
// of dirs, and whether it has uncommitted changes to tracked files; "" when
// there is none or git cannot read it.
func checkoutCommit(dirs []string) (string, bool) {
	for _, d := range dirs {
		root := checkoutRoot(d)
		if root == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
		commit := strings.TrimSpace(string(out))
		if err != nil || len(commit) < 40 {
			continue
		}
		st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
		return commit, err == nil && len(strings.TrimSpace(string(st))) > 0
	}
	return "", false
}

// checkoutRoot is the directory at or above dir holding both .git and a
// go.mod for grasp's module, "" when there is none.
func checkoutRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && strings.HasPrefix(strings.TrimSpace(string(mod)), "module "+modulePath+"\n") {
				return dir
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
