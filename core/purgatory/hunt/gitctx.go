package hunt

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	gitrepo "github.com/grasp-dev/grasp/core/git"
	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// Repos is the bare-repository store fetched objects land in: git.Repos,
// which runs git under the per-repository lock that every write to a bare
// repository takes (pushes, alignment, deletion), so a fetch never races
// them.
type Repos interface {
	HasObjects(ctx context.Context, repo nip34.RepoRef, oids []string) (map[string]bool, error)
	Fetch(ctx context.Context, repo nip34.RepoRef, spec gitrepo.FetchSpec) (stderr string, err error)
}

// GitContext is the real SyncContext: it fetches into the bare repositories
// through Repos. Arrived and Drifted are the caller's (they need the event
// store and purgatory), given as funcs.
type GitContext struct {
	// Repos holds the bare repositories.
	Repos Repos
	// OnArrived releases held events whose objects are all present now. It
	// is called from fetch tasks, concurrently for different repositories.
	OnArrived func(ctx context.Context, repo nip34.RepoRef)
	// FindDrifted lists hosted repositories whose refs differ from their
	// latest accepted state. Nil means none.
	FindDrifted func(ctx context.Context) ([]Need, error)
	// AllowPrivate lets fetches reach loopback, private and link-local
	// addresses (tests, or an operator whose git hosts are internal).
	// Otherwise every source host is resolved once, refused if any of its
	// addresses is internal, and git is pinned to the checked address with
	// redirects off, so DNS rebinding and redirects cannot get around it.
	AllowPrivate bool
	// Resolver resolves source hosts when AllowPrivate is off (default
	// net.DefaultResolver).
	Resolver Resolver
	// Timeout bounds one Fetch, fallbacks included (default 10 min).
	Timeout time.Duration
	Log     hclog.Logger

	// internal is netguard.Internal unless a test lets loopback stand in
	// for a public host.
	internal func(netip.Addr) bool
}

// maxRuns bounds the git processes (remote requests) of one Fetch.
const maxRuns = 32

func (g *GitContext) logger() hclog.Logger {
	if g.Log == nil {
		return hclog.NewNullLogger()
	}
	return g.Log
}

// Arrived calls OnArrived.
func (g *GitContext) Arrived(ctx context.Context, repo nip34.RepoRef) {
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

// Has reports which oids repo holds, in the order asked.
func (g *GitContext) Has(ctx context.Context, repo nip34.RepoRef, oids []string) ([]string, error) {
	if len(oids) == 0 {
		return nil, nil
	}
	m, err := g.Repos.HasObjects(ctx, repo, oids)
	if err != nil {
		return nil, fmt.Errorf("check objects in %s: %w", repo, err)
	}
	var present []string
	for _, o := range oids {
		if m[o] {
			present = append(present, o)
		}
	}
	return present, nil
}

// Fetch runs `git fetch <url> <oid>...` (full history, protocol v2, no
// prompts, no tags, no FETCH_HEAD) into repo. git aborts the whole fetch
// when one wanted object is missing on the remote (grasp.md §9.1), so on
// that error Fetch drops the objects git names, or bisects when it names
// none, until every object the remote has has arrived.
func (g *GitContext) Fetch(ctx context.Context, repo nip34.RepoRef, url string, oids []string) ([]string, error) {
	t, err := parseSource(url)
	if err != nil {
		return nil, &FetchError{Kind: KindRefused, URL: url, Err: err}
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pin, err := g.pinSource(ctx, url, t)
	if err != nil {
		return nil, err
	}
	// git is given the URL that was checked, whatever the announcement
	// spelled; results and errors still name the caller's url.
	src := t.url

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
		ferr := g.fetchOnce(ctx, repo, src, pin, set)
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
func (g *GitContext) fetchOnce(ctx context.Context, repo nip34.RepoRef, url string, pin []string, oids []string) *FetchError {
	start := time.Now()
	stderr, err := g.Repos.Fetch(ctx, repo, gitrepo.FetchSpec{URL: url, OIDs: oids, Config: pin})
	if err == nil {
		g.logger().Debug("git fetch done", "url", url, "oids", len(oids), "took", time.Since(start))
		return nil
	}
	detail := strings.TrimSpace(stderr)
	kind := Classify(detail)
	switch {
	case ctx.Err() != nil:
		kind = KindTimeout
		if errors.Is(ctx.Err(), context.Canceled) {
			kind = KindOther
		}
	case errors.Is(err, gitrepo.ErrNotFound) || refusedAsInvalid(err):
		kind = KindLocal
	}
	return &FetchError{Kind: kind, URL: url, Detail: truncate(detail, 500), Err: err}
}

// refusedAsInvalid reports whether Repos.Fetch refused the request itself
// (a bad object id or URL, outcome.Invalid) before any git ran.
func refusedAsInvalid(err error) bool {
	r, ok := outcome.Of(err)
	return ok && r.Kind == outcome.Invalid
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
