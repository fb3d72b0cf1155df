package hunt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/grasp-dev/grasp/core/nip34"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// GitContext is the real SyncContext: it runs git against the bare
// repositories on disk. Arrived and Drifted are the caller's (they need the
// event store and purgatory), given as funcs.
type GitContext struct {
	// RepoPath returns the bare repository directory of repo.
	RepoPath func(Repo) string
	// OnArrived releases held events whose objects are all present now. It
	// is called from fetch tasks, concurrently for different repositories.
	OnArrived func(ctx context.Context, repo Repo)
	// FindDrifted lists hosted repositories whose refs differ from their
	// latest accepted state. Nil means none.
	FindDrifted func(ctx context.Context) ([]Need, error)
	// Git is the git binary (default "git").
	Git string
	// AllowPrivate lets fetches reach loopback, private and link-local
	// addresses (tests, or an operator whose git hosts are internal).
	// Otherwise every source host is resolved once, refused if any of its
	// addresses is internal, and git is pinned to the checked address with
	// redirects off, so DNS rebinding and redirects cannot get around it.
	AllowPrivate bool
	// Resolver resolves source hosts when AllowPrivate is off (default
	// net.DefaultResolver).
	Resolver *net.Resolver
	// Timeout bounds one Fetch, fallbacks included (default 10 min).
	Timeout time.Duration
	Log     hclog.Logger
}

// maxRuns bounds the git processes (remote requests) of one Fetch.
const maxRuns = 32

// maxStderr bounds what is kept of git's stderr for classification.
const maxStderr = 16 << 10

func (g *GitContext) git() string {
	if g.Git == "" {
		return "git"
	}
	return g.Git
}

func (g *GitContext) logger() hclog.Logger {
	if g.Log == nil {
		return hclog.NewNullLogger()
	}
	return g.Log
}

// Arrived calls OnArrived.
func (g *GitContext) Arrived(ctx context.Context, repo Repo) {
	if g.OnArrived != nil {
		g.OnArrived(ctx, repo)
	}
}

// Drifted calls FindDrifted.
func (g *GitContext) Drifted(ctx context.Context) ([]Need, error) {
	if g.FindDrifted == nil {
		return nil, nil
	}
	return g.FindDrifted(ctx)
}

// Has reports which oids repo holds, with one `git cat-file --batch-check`.
func (g *GitContext) Has(ctx context.Context, repo Repo, oids []string) ([]string, error) {
	if len(oids) == 0 {
		return nil, nil
	}
	dir := g.RepoPath(repo)
	var in bytes.Buffer
	for _, o := range oids {
		if !nip34.IsObjectID(o) {
			return nil, fmt.Errorf("check objects in %s: invalid object id %q", repo.Address(), truncate(o, 80))
		}
		in.WriteString(o)
		in.WriteByte('\n')
	}
	cmd := exec.CommandContext(ctx, g.git(), "-C", dir, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	cmd.Env = gitEnv()
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &limitedBuffer{max: maxStderr, buf: &stderr}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("check objects in %s: %w: %s", repo.Address(), err, strings.TrimSpace(stderr.String()))
	}
	var present []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), " ")
		if rest != "missing" && rest != "" {
			present = append(present, name)
		}
	}
	return present, nil
}

// Fetch runs `git fetch <url> <oid>...` (full history, protocol v2, no
// prompts, no tags, no FETCH_HEAD) into repo. git aborts the whole fetch
// when one wanted object is missing on the remote (grasp.md §9.1), so on
// that error Fetch drops the objects git names, or bisects when it names
// none, until every object the remote has has arrived.
func (g *GitContext) Fetch(ctx context.Context, repo Repo, url string, oids []string) ([]string, error) {
	if _, ok := parseSource(url); !ok {
		return nil, &FetchError{Kind: KindLocal, URL: url, Err: errors.New("only http and https sources are fetched")}
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dir := g.RepoPath(repo)
	pin, err := g.pinSource(ctx, url)
	if err != nil {
		return nil, err
	}

	present, err := g.Has(ctx, repo, oids)
	if err != nil {
		return nil, &FetchError{Kind: KindLocal, URL: url, Err: err}
	}
	have := toSet(present)
	var want []string
	for _, o := range oids {
		if !have[o] {
			want = append(want, o)
		}
	}

	var fatal *FetchError
	// Each run is one request to the remote. git names the missing object,
	// so one extra run per missing object is the norm; bisection (for a
	// remote that names none) is bounded so a slot never turns into a flood.
	budget := 2*len(want) + 2
	if budget > maxRuns {
		budget = maxRuns
	}
	stack := [][]string{want}
	for len(stack) > 0 && fatal == nil {
		set := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(set) == 0 {
			continue
		}
		if budget == 0 {
			continue
		}
		budget--
		ferr := g.fetchOnce(ctx, dir, url, pin, set)
		switch {
		case ferr == nil:
		case ferr.Kind != KindMissing:
			fatal = ferr
		case len(set) == 1:
			// This one is not on the remote; the rest go on.
		default:
			if named := namedOIDs(ferr.Detail, set); len(named) > 0 {
				stack = append(stack, without(set, named))
			} else {
				half := len(set) / 2
				stack = append(stack, set[half:], set[:half])
			}
		}
	}

	// Count what arrived even when the fetch ran out of time or was
	// cancelled: the objects are on disk and their events can be released.
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer hcancel()
	after, herr := g.Has(hctx, repo, oids)
	if herr != nil {
		if fatal != nil {
			return nil, fatal
		}
		return nil, &FetchError{Kind: KindLocal, URL: url, Err: herr}
	}
	if fatal != nil {
		fatal.Missing = without(oids, after)
		return after, fatal
	}
	if len(after) < len(oids) {
		return after, &FetchError{Kind: KindMissing, URL: url, Missing: without(oids, after),
			Detail: fmt.Sprintf("remote lacks %d of %d objects", len(oids)-len(after), len(oids))}
	}
	return after, nil
}

// fetchOnce runs one git fetch and classifies its failure.
func (g *GitContext) fetchOnce(ctx context.Context, dir, url string, pin []string, oids []string) *FetchError {
	args := append([]string{}, pin...)
	args = append(args,
		"-c", "protocol.version=2",
		"-c", "credential.helper=",
		"-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=60",
		"-C", dir,
		"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-gc",
		"--end-of-options", url,
	)
	args = append(args, oids...)
	cmd := exec.CommandContext(ctx, g.git(), args...)
	cmd.Env = gitEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{max: maxStderr, buf: &stderr}
	start := time.Now()
	err := cmd.Run()
	if err == nil {
		g.logger().Debug("git fetch done", "url", url, "oids", len(oids), "took", time.Since(start))
		return nil
	}
	detail := strings.TrimSpace(stderr.String())
	kind := Classify(detail)
	if ctx.Err() != nil {
		kind = KindTimeout
		if errors.Is(ctx.Err(), context.Canceled) {
			kind = KindOther
		}
	}
	return &FetchError{Kind: kind, URL: url, Detail: truncate(detail, 500), Err: fmt.Errorf("git fetch %d objects: %w", len(oids), err)}
}

// gitEnv keeps git from prompting, from using other transports than HTTP(S)
// (redirects and submodules included), and its messages in English so
// Classify can read them.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_ALLOW_PROTOCOL=http:https",
		"GIT_PROTOCOL_FROM_USER=0",
		"LC_ALL=C",
		"LANGUAGE=C",
	)
}

// Classify reads git's stderr. Only failures to reach the host (DNS, TCP,
// TLS) are KindNetwork: a remote that answers with an error is alive, and
// listing it as naughty was a false positive in ngit-grasp (grasp.md §9.1).
func Classify(stderr string) Kind {
	s := strings.ToLower(stderr)
	has := func(subs ...string) bool {
		for _, x := range subs {
			if strings.Contains(s, x) {
				return true
			}
		}
		return false
	}
	switch {
	case s == "":
		return KindOther
	case has("cannot change to", "not a git repository", "unable to create temporary", "insufficient permission", "no space left"):
		return KindLocal
	case has("not our ref", "unadvertised object", "no such remote ref", "couldn't find remote ref",
		"remote did not send all necessary objects", "bad object", "not a valid object"):
		return KindMissing
	case has("could not resolve host", "couldn't resolve host", "name or service not known", "temporary failure in name resolution",
		"failed to connect", "couldn't connect to server", "connection refused", "network is unreachable", "no route to host",
		"connection timed out", "ssl certificate problem", "ssl_connect", "ssl routines", "gnutls", "tls handshake",
		"certificate verify failed", "unable to get local issuer certificate", "schannel"):
		return KindNetwork
	case has("operation timed out", "timed out"):
		return KindTimeout
	case has("returned error", "not found", "remote error", "protocol error", "unexpected", "expected", "http/2", "rpc failed",
		"early eof", "transfer closed", "empty reply", "reset by peer", "unable to access", "fatal:"):
		return KindProtocol
	}
	return KindOther
}

// namedOIDs returns the members of set that git's message names.
func namedOIDs(detail string, set []string) []string {
	var out []string
	for _, o := range set {
		if strings.Contains(detail, o) {
			out = append(out, o)
		}
	}
	return out
}

func toSet(s []string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, x := range s {
		m[x] = true
	}
	return m
}

// without returns list minus drop, keeping order.
func without(list, drop []string) []string {
	d := toSet(drop)
	var out []string
	for _, x := range list {
		if !d[x] {
			out = append(out, x)
		}
	}
	return out
}

// limitedBuffer keeps the first max bytes written and discards the rest,
// so a chatty remote cannot grow our memory.
type limitedBuffer struct {
	max int
	buf *bytes.Buffer
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}
