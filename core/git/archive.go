package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// The git side of the repository pages' downloads (served by core/githttp,
// in the clones' process slots): a commit's tree as an archive and a blob's
// bytes, streamed as git writes them, and what an archive would hold,
// counted before git writes it. Callers pass object ids they resolved
// themselves, never a visitor's revision.

// TreeSize counts the files of tree-ish oid in repo and their bytes,
// reading at most what maxFiles entries take: past that it reports one
// more file than the bound. timeout stops git.
func (r *Repos) TreeSize(ctx context.Context, repo nip34.RepoRef, oid string, maxFiles int, timeout time.Duration) (files int, size int64, err error) {
	// an entry of `ls-tree -r -l -z` is under 80 bytes plus its path
	out, err := r.Read(ctx, repo, ReadLimits{MaxBytes: maxFiles * 400, Timeout: timeout}, nil,
		"ls-tree", "-r", "-l", "-z", oid)
	cut := errors.Is(err, ErrReadTruncated)
	if err != nil && !cut {
		return 0, 0, err
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, _, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 || f[1] != "blob" {
			continue
		}
		files++
		n, _ := strconv.ParseInt(f[3], 10, 64)
		size += n
	}
	if cut {
		files = max(files, maxFiles+1)
	}
	return files, size, nil
}

// Archive writes the tree of commit (a commit or tag id) to w as format
// ("tar" or "zip"), every path under prefix, for at most timeout.
func (r *Repos) Archive(ctx context.Context, repo nip34.RepoRef, w io.Writer, format, prefix, commit string, timeout time.Duration) error {
	// --worktree-attributes: a bare repository has none, so no export-subst
	// or export-ignore in the tree changes what is written: the snapshot is
	// the tree
	return r.stream(ctx, repo, w, timeout, "archive", "--worktree-attributes", "--format="+format, "--prefix="+prefix, commit)
}

// Blob writes the bytes of blob to w, for at most timeout.
func (r *Repos) Blob(ctx context.Context, repo nip34.RepoRef, w io.Writer, blob string, timeout time.Duration) error {
	return r.stream(ctx, repo, w, timeout, "cat-file", "blob", blob)
}

// stream runs one read-only git command in repo with its stdout copied to
// w as it comes, for at most timeout and no longer than ctx.
func (r *Repos) stream(ctx context.Context, repo nip34.RepoRef, w io.Writer, timeout time.Duration, args ...string) error {
	dir, err := r.existing(repo)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.git, append([]string{"--git-dir=" + dir, "--no-replace-objects"}, args...)...)
	cmd.Env = gitEnv("GIT_NO_LAZY_FETCH=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &limitedBuffer{buf: &stderr, max: 4096}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
