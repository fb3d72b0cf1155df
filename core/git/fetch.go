package git

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

// FetchSpec is one `git fetch` of objects into a hosted repository (the
// git-data hunter's): OIDs from URL, with Config as extra `-c key=value`
// settings (the hunter pins the address it checked and forbids redirects).
type FetchSpec struct {
	URL    string
	OIDs   []string
	Config []string
}

// maxFetchStderr bounds what is kept of a fetch's stderr: a chatty remote
// must not grow our memory, and the caller only classifies the start.
const maxFetchStderr = 16 << 10

// Fetch brings spec.OIDs from spec.URL into repo, under the repository's lock
// like every other write: full history (never shallow), protocol v2, no
// prompts or credentials, no tags, no FETCH_HEAD, no submodules, no auto gc,
// and no transport but http(s), redirects included. Only objects arrive; no
// ref moves. It returns git's stderr (bounded, in English) so the caller can
// tell a dead host from a missing object.
func (r *Repos) Fetch(ctx context.Context, repo nip34.RepoRef, spec FetchSpec) (stderr string, err error) {
	dir, err := r.existing(repo)
	if err != nil {
		return "", err
	}
	for _, o := range spec.OIDs {
		if !nip34.IsObjectID(o) {
			return "", fmt.Errorf("invalid: %q is not an object id", truncate(o, 80))
		}
	}
	if strings.HasPrefix(spec.URL, "-") {
		return "", fmt.Errorf("invalid: fetch URL %q", truncate(spec.URL, 120))
	}
	unlock, err := r.locks.acquire(ctx, dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	// objects from another server are checked like a push (audit F10)
	args := append([]string{"--git-dir=" + dir}, fsckArgs("fetch")...)
	for _, c := range append([]string{
		"protocol.version=2",
		"credential.helper=",
		// a remote that trickles is given up after a minute below 1 KB/s
		"http.lowSpeedLimit=1000", "http.lowSpeedTime=60",
	}, spec.Config...) {
		args = append(args, "-c", c)
	}
	args = append(args, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-gc",
		"--end-of-options", spec.URL)
	args = append(args, spec.OIDs...)
	cmd := exec.CommandContext(ctx, r.git, args...)
	cmd.Env = gitEnv(
		"GIT_ASKPASS=", "SSH_ASKPASS=",
		// no file://, ssh or ext:: — not even through a redirect or a submodule
		"GIT_ALLOW_PROTOCOL=http:https", "GIT_PROTOCOL_FROM_USER=0",
		// messages in English, so callers can classify them
		"LC_ALL=C", "LANGUAGE=C",
	)
	buf := &tailBuffer{max: maxFetchStderr}
	cmd.Stderr = buf
	if err := cmd.Run(); err != nil {
		return buf.String(), fmt.Errorf("git fetch %d objects into %s: %w", len(spec.OIDs), dir, err)
	}
	return buf.String(), nil
}

// HasCommit reports whether oid exists in repo; a repository that does not
// exist has no objects (policy.GitData).
func (r *Repos) HasCommit(ctx context.Context, repo nip34.RepoRef, oid string) (bool, error) {
	if !r.Exists(repo) {
		return false, nil
	}
	m, err := r.HasObjects(ctx, repo, []string{oid})
	if err != nil {
		return false, err
	}
	return m[oid], nil
}
