package deploy

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gitEnv isolates git from the machine's config and trusts the throwaway
// CA, as an operator's users would with a real certificate.
func gitEnv(home, caFile string) []string {
	env := append(os.Environ(),
		"HOME="+home,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=grasp deploy test", "GIT_AUTHOR_EMAIL=deploy@example.invalid",
		"GIT_COMMITTER_NAME=grasp deploy test", "GIT_COMMITTER_EMAIL=deploy@example.invalid",
	)
	if caFile != "" {
		env = append(env, "GIT_SSL_CAINFO="+caFile)
	}
	return env
}

// git runs git in dir. The bound is a hang detector sized for a 200 MB
// push on a loaded 2-core machine under -race, not a speed requirement.
func git(dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

func mustGit(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := git(dir, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// smallRepo makes a repository with one commit on main and returns its
// directory and the commit id.
func smallRepo(t testing.TB) (string, string) {
	t.Helper()
	needTool(t, "git", "git")
	dir := t.TempDir()
	env := gitEnv(dir, "")
	mustGit(t, dir, env, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(dir, "README"), "a repository pushed through a TLS proxy\n")
	mustGit(t, dir, env, "add", "README")
	mustGit(t, dir, env, "commit", "-q", "-m", "first")
	return dir, mustGit(t, dir, env, "rev-parse", "HEAD")
}

// bigSize is the size of the large push (issue 18: "a 200 MB push").
const bigSize = 200 << 20

var bigData struct {
	once     sync.Once
	dir, sha string
	err      error
}

// bigRepo makes, once per test binary, a repository whose one commit holds
// 200 MiB of incompressible data, stored uncompressed and never
// deltified, so that pushing it costs the proxies and grasp the transfer
// rather than the client CPU.
func bigRepo(t testing.TB) (string, string) {
	t.Helper()
	needTool(t, "git", "git")
	bigData.once.Do(func() {
		dir := filepath.Join(shared, "big")
		env := gitEnv(dir, "")
		steps := func() error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if _, err := git(dir, env, "init", "-q", "-b", "main"); err != nil {
				return err
			}
			for _, kv := range [][2]string{{"core.bigFileThreshold", "1m"}, {"core.compression", "0"}, {"pack.compression", "0"}} {
				if _, err := git(dir, env, "config", kv[0], kv[1]); err != nil {
					return err
				}
			}
			if err := writeRandom(filepath.Join(dir, "blob.bin"), bigSize); err != nil {
				return err
			}
			if _, err := git(dir, env, "add", "blob.bin"); err != nil {
				return err
			}
			if _, err := git(dir, env, "commit", "-q", "-m", "200 MiB"); err != nil {
				return err
			}
			sha, err := git(dir, env, "rev-parse", "HEAD")
			bigData.dir, bigData.sha = dir, sha
			// The working copy is not needed once committed.
			os.Remove(filepath.Join(dir, "blob.bin"))
			return err
		}
		bigData.err = steps()
	})
	if bigData.err != nil {
		t.Fatalf("make the 200 MiB repository: %v", bigData.err)
	}
	return bigData.dir, bigData.sha
}

// writeRandom writes n bytes of a fixed pseudo-random stream.
func writeRandom(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	src := rand.NewChaCha8([32]byte{'g', 'r', 'a', 's', 'p'})
	buf := make([]byte, 1<<20)
	for n > 0 {
		k := min(int64(len(buf)), n)
		src.Read(buf[:k])
		if _, err := w.Write(buf[:k]); err != nil {
			f.Close()
			return err
		}
		n -= k
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
