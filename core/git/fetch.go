package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
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
// no transport but http(s), redirects included, and a clean environment
// (fetchEnv: no proxy, no config or credentials of ours). Only objects arrive; no
// ref moves. It returns git's stderr (bounded, in English) so the caller can
// tell a dead host from a missing object.
func (r *Repos) Fetch(ctx context.Context, repo nip34.RepoRef, spec FetchSpec) (stderr string, err error) {
	dir, err := r.existing(repo)
	if err != nil {
		return "", err
	}
	for _, o := range spec.OIDs {
		if !nip34.IsObjectID(o) {
			return "", outcome.Errorf(outcome.Invalid, "%q is not an object id", Clip(o, 80))
		}
	}
	if strings.HasPrefix(spec.URL, "-") {
		return "", outcome.Errorf(outcome.Invalid, "fetch URL %q", Clip(spec.URL, 120))
	}
	unlock, err := r.lock(ctx, dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	// objects from another server are checked like a push (audit F10)
	args := append([]string{"--git-dir=" + dir}, fsckArgs("fetch")...)
	for _, c := range append([]string{
		"protocol.version=2",
		"credential.helper=",
		// a proxy resolves the name itself, which voids the caller's pin
		// (audit F09d); the environment's proxies are not passed either
		"http.proxy=",
		// a remote that trickles is given up after a minute below 1 KB/s
		"http.lowSpeedLimit=1000", "http.lowSpeedTime=60",
	}, spec.Config...) {
		args = append(args, "-c", c)
	}
	args = append(args, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-gc",
		"--end-of-options", spec.URL)
	args = append(args, spec.OIDs...)
	cmd := exec.CommandContext(ctx, r.git, args...)
	cmd.Env = fetchEnv()
	buf := &tailBuffer{max: maxFetchStderr}
	cmd.Stderr = buf
	if err := cmd.Run(); err != nil {
		return buf.String(), fmt.Errorf("git fetch %d objects into %s: %w", len(spec.OIDs), dir, err)
	}
	return buf.String(), nil
}

// fetchEnvKept are the only variables of our environment a fetch sees:
// where programs and temporary files are, and the operator's CA bundle.
var fetchEnvKept = []string{"PATH", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR"}

// fetchEnv is the whole environment of a fetch from a stranger's URL, built
// from nothing rather than filtered (audit F09d): no http_proxy/https_proxy/
// all_proxy/no_proxy in any case (a proxy voids the address pin), no GIT_*
// (GIT_SSL_NO_VERIFY, GIT_CONFIG_PARAMETERS, GIT_PROXY_COMMAND ...), no
// global or system config (http.proxy, url.*.insteadOf), and a HOME without
// files, so curl reads no ~/.netrc (the operator's credentials must not be
// sent to, or used to read from, a host a stranger names).
func fetchEnv() []string {
	var env []string
	for _, k := range fetchEnvKept {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env,
		"HOME=/nonexistent", "XDG_CONFIG_HOME=/nonexistent",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=", "SSH_ASKPASS=",
		// no file://, ssh or ext:: — not even through a redirect or a submodule
		"GIT_ALLOW_PROTOCOL=http:https", "GIT_PROTOCOL_FROM_USER=0",
		// messages in English, so callers can classify them
		"LC_ALL=C", "LANGUAGE=C",
	)
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
