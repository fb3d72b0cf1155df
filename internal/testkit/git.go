package testkit

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The git client of a test (the one a user would run against the server):
// isolated from the machine's git config and environment, with a fixed
// author and date so that the same commits get the same ids.

// GitClientEnv is the environment of a test's git client: the process's
// environment without GIT_*, no system or global config, no prompts, a
// fixed author, committer and date.
func GitClientEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	)
}

// GitTry runs git in dir ("" for the current directory) with GitClientEnv and
// returns its combined output and error.
func GitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = GitClientEnv()
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

// Git runs git in dir, fails the test on error and returns the output
// without surrounding space.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitTry(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// GitWork makes a non-bare working repository with one commit on main.
func GitWork(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Git(t, dir, "init", "-q", "-b", "main")
	GitCommit(t, dir, "first")
	return dir
}

// GitCommit writes a file named after msg in the working repository dir,
// commits it and returns the commit's id.
func GitCommit(t testing.TB, dir, msg string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, msg+".txt"), []byte(msg+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "-q", "-m", msg)
	return Git(t, dir, "rev-parse", "HEAD")
}

// GitRepo writes a bare repository at dir with commits commits of
// fileBytes of hex text each (tens of MB for thousands of commits) with
// git fast-import, repacked with bitmaps as a served repository would be:
// the repository of the git benchmarks.
func GitRepo(t testing.TB, dir string, commits, fileBytes int) {
	t.Helper()
	Git(t, "", "init", "-q", "--bare", "-b", "main", dir)
	cmd := exec.Command("git", "--git-dir="+dir, "fast-import", "--quiet")
	cmd.Env = GitClientEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(stdin, 1<<20)
	raw := make([]byte, fileBytes/2)
	for i := 0; i < commits; i++ {
		_, _ = rand.Read(raw)
		content := hex.EncodeToString(raw)
		msg := fmt.Sprintf("commit %d", i)
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter T <t@example.com> %d +0000\ndata %d\n%s\n", 1700000000+i, len(msg), msg)
		fmt.Fprintf(w, "M 100644 inline file%03d.txt\ndata %d\n%s\n", i%200, len(content), content)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fast-import: %v", err)
	}
	Git(t, dir, "repack", "-adbq")
}
