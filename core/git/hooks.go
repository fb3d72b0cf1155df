package git

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/grasp-dev/grasp/core/outcome"
)

// hooksDirName is where the push gate's hooks live, under the repository
// root: not an npub, so List never takes it for an owner.
const hooksDirName = ".grasp-hooks"

// The push gate's hooks (receive-pack runs them with core.hooksPath set to
// their directory, and with the two pipes of StartService as fds 3 and 4,
// answered by a Gate: core/githttp/pushgate.go). They use shell builtins
// only. pre-receive runs once the pack is in git's quarantine and before
// any ref moves: it asks the server, which checks the whole push and takes
// the repository lock, whether to go on.
// reference-transaction tells the server when the refs have moved (or
// not), so the lock is given back at once.
var gateHooks = map[string]string{
	"pre-receive": `#!/bin/sh
# grasp push gate (core/githttp/pushgate.go): the server checks the push as a
# whole and takes the repository lock before any ref moves.
[ -n "$GRASP_HOOK_SELFTEST" ] && exit 0
while IFS= read -r _; do :; done
q=${GIT_QUARANTINE_PATH##*/}
printf 'pre-receive %s\n' "$q" >&3 || { echo "error: the server's push gate is not listening" >&2; exit 1; }
IFS= read -r answer <&4 || { echo "error: the server's push gate did not answer" >&2; exit 1; }
[ "$answer" = ok ] && exit 0
printf '%s\n' "${answer#no }" >&2
exit 1
`,
	"reference-transaction": `#!/bin/sh
# grasp push gate (core/githttp/pushgate.go): the refs have moved, or failed to;
# the server gives the repository lock back.
[ -n "$GRASP_HOOK_SELFTEST" ] && exit 0
while IFS= read -r _; do :; done
case "$1" in committed|aborted) printf '%s\n' "$1" >&3 2>/dev/null ;; esac
exit 0
`,
}

// installHooks writes the push gate's hooks under root and checks that they
// run: if they did not (a data dir mounted noexec), receive-pack would skip
// them and move refs with no lock and no check of the push as a whole, so
// the server must not start.
func installHooks(root string) (string, error) {
	dir := filepath.Join(root, hooksDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	for name, body := range gateHooks {
		path := filepath.Join(dir, name)
		if cur, err := os.ReadFile(path); err != nil || !bytes.Equal(cur, []byte(body)) {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte(body), 0o755); err != nil {
				return "", fmt.Errorf("write hook %s: %w", path, err)
			}
			if err := os.Rename(tmp, path); err != nil {
				return "", fmt.Errorf("install hook %s: %w", path, err)
			}
		}
		if err := os.Chmod(path, 0o755); err != nil {
			return "", fmt.Errorf("make hook %s executable: %w", path, err)
		}
		cmd := exec.Command(path)
		cmd.Env = append(gitEnv(), "GRASP_HOOK_SELFTEST=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git hooks cannot run from %s (is the data dir mounted noexec?): %s: %w: %s", dir, name, err, bytes.TrimSpace(out))
		}
	}
	return dir, nil
}

// QuarantineDir resolves the base name a push gate's hook sent to the
// quarantine directory inside the repository at dir ("" when the push
// brought no pack).
func QuarantineDir(dir, base string) (string, error) {
	if base == "" {
		return "", nil
	}
	if strings.ContainsAny(base, `/\`) || base == "." || base == ".." {
		return "", outcome.Errorf(outcome.Error, "unexpected quarantine %q", Clip(base, 80))
	}
	q := filepath.Join(dir, "objects", base)
	if st, err := os.Stat(q); err != nil || !st.IsDir() {
		return "", outcome.Errorf(outcome.Error, "quarantine %q not found", Clip(base, 80))
	}
	return q, nil
}

// Complete reports whether the repository at dir, plus the quarantine
// directory quarantine ("" for none), holds every object of every commit
// in tips: the connectivity check git makes per ref, made for a push as a
// whole. An error means it does not (or could not be told).
func (r *Repos) Complete(ctx context.Context, dir, quarantine string, tips []string) error {
	if len(tips) == 0 {
		return nil
	}
	var env []string
	if quarantine != "" {
		env = []string{"GIT_OBJECT_DIRECTORY=" + quarantine, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(dir, "objects"), "GIT_QUARANTINE_PATH=" + quarantine}
	}
	_, err := r.runEnv(ctx, dir, env, strings.NewReader(strings.Join(tips, "\n")+"\n"),
		"rev-list", "--objects", "--stdin", "--not", "--all", "--quiet")
	return err
}
