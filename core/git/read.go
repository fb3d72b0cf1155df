package git

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// readCommands are the git subcommands Read runs: each only reads the
// repository. Reads take no repository lock, like upload-pack: git updates
// refs and adds objects atomically for readers, and a read never waits for
// a push.
var readCommands = map[string]bool{
	"cat-file": true, "ls-tree": true, "log": true, "rev-list": true,
	"diff-tree": true, "for-each-ref": true, "rev-parse": true, "merge-base": true,
	"blame": true,
}

// ReadLimits bound one Read.
type ReadLimits struct {
	// MaxBytes caps what is kept of stdout (default 4 MiB): beyond it the
	// process is stopped and the output reported as truncated.
	MaxBytes int
	// Timeout stops the process (default 10 s).
	Timeout time.Duration
}

// ErrReadTruncated marks output cut at ReadLimits.MaxBytes.
var ErrReadTruncated = errors.New("output truncated")

// Read runs one read-only git command (cat-file, ls-tree, log, rev-list,
// diff-tree, for-each-ref, rev-parse, merge-base or blame) in repo with bounded
// output and time, for the repository pages. Arguments that name files to write
// (--output) are refused; callers pass revisions as object ids or full ref
// names and paths after "--". When the output reaches MaxBytes, Read
// returns what it kept and ErrReadTruncated.
func (r *Repos) Read(ctx context.Context, repo nip34.RepoRef, lim ReadLimits, stdin io.Reader, args ...string) ([]byte, error) {
	if len(args) == 0 || !readCommands[args[0]] {
		return nil, outcome.Errorf(outcome.Invalid, "git %q is not a read command", strings.Join(args[:min(len(args), 1)], ""))
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--output") {
			return nil, outcome.Errorf(outcome.Invalid, "git read with %q", a)
		}
		if a == "--" {
			break
		}
	}
	dir, err := r.existing(repo)
	if err != nil {
		return nil, err
	}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = 4 << 20
	}
	if lim.Timeout <= 0 {
		lim.Timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.git, append([]string{"--git-dir=" + dir, "--no-replace-objects"}, args...)...)
	// paths from a URL are names, never pathspec magic or globs
	cmd.Env = gitEnv("GIT_NO_LAZY_FETCH=1", "GIT_LITERAL_PATHSPECS=1")
	cmd.Stdin = stdin
	out := &capped{max: lim.MaxBytes, stop: cancel}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &limitedBuffer{buf: &stderr, max: 4096}
	err = cmd.Run()
	if out.full {
		return out.buf.Bytes(), ErrReadTruncated
	}
	if err != nil {
		return nil, fmt.Errorf("git %s in %s/%s: %w: %s", args[0], repo.Npub(), repo.Identifier, err, strings.TrimSpace(stderr.String()))
	}
	return out.buf.Bytes(), nil
}

// capped keeps the first max bytes written and then stops the process.
type capped struct {
	buf  bytes.Buffer
	max  int
	full bool
	stop func()
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:room])
		c.full = true
		c.stop()
		return 0, ErrReadTruncated
	}
	return c.buf.Write(p)
}

type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// maxStampEntries bounds the walk of refs/ for RefsStamp; a repository
// with more loose refs gets no stamp (its readers run for-each-ref).
const maxStampEntries = 4096

// RefsStamp fingerprints a repository's refs and HEAD from file metadata
// (HEAD, packed-refs and every file under refs/: name, size, modification
// time), without running git: git's files backend writes every ref update
// as a new file renamed into place or a rewritten packed-refs, so any
// change of a ref or of HEAD changes the stamp. Readers cache what they
// derived from the refs under it. "" means no stamp could be taken.
func (r *Repos) RefsStamp(repo nip34.RepoRef) (string, error) {
	dir, err := r.existing(repo)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range []string{"HEAD", "packed-refs"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			fmt.Fprintf(h, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
		}
	}
	n := 0
	err = filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > maxStampEntries {
			return errTooManyRefs
		}
		if d.IsDir() {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d %d\n", p[len(dir):], st.Size(), st.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		// a ref renamed away mid-walk, or too many: no stamp this time
		return "", nil
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

var errTooManyRefs = errors.New("too many loose refs")
