package pages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// Options configures the pages.
type Options struct {
	// Service is the public URL: base path of every link, clone and relay
	// URLs shown.
	Service nip34.Service
	// Name and Description head the landing page; Version is the build
	// shown in its footer (metrics.BuildIdentity).
	Name, Description, Version string
	// Repos is where repositories are read (required).
	Repos *git.Repos
	// Events is the store's read side, for issues, patches, PRs and
	// statuses (required).
	Events roster.Events
	// Roster reads announcements and maintainers (required).
	Roster *roster.Source
	// WebClient is the git-nostr web client linked for each repository,
	// issue and PR; default "https://gitworkshop.dev".
	WebClient string
	// MaxFileBytes is the largest file shown (default 512 KiB); larger
	// files are described, not shown.
	MaxFileBytes int
	// MaxDiffBytes bounds a commit's diff (default 512 KiB).
	MaxDiffBytes int
	// CacheBytes bounds the cache of what was read from git (default 64 MiB).
	CacheBytes int
	// PerPage is the landing page's page size (default 50).
	PerPage int
	// Listed reports whether a repository may be shown to anyone (GRASP-08:
	// private repositories are not, visibility.Listed); nil: every hosted
	// repository is.
	Listed func(context.Context, nip34.RepoRef) bool
	// Readers is GRASP-08's reader check of one event (visibility.Readers):
	// nil means anyone may read it. A page shows only such events, since a
	// browser brings no key. nil: every event is public.
	Readers func(context.Context, *nostr.Event) func(pubkey string) bool
	// Facts are the parts' read-only views the "On this server" page and
	// the summary show (status.go); zero: none of them.
	Facts Facts
	// MaxGitReads bounds the git processes pages run at once (default 4);
	// further views wait for a slot.
	MaxGitReads int
	// MaxRenders bounds the Markdown and highlighting renders running at
	// once (default 2), MaxRendersPerClient those started for one client
	// (default 1); a view finding no render free shows plain text.
	// RenderBudget is how long a view waits for its render (default 5 s)
	// before it shows plain text (bounds.go).
	MaxRenders          int
	MaxRendersPerClient int
	RenderBudget        time.Duration
	// TreePage is the number of entries on one page of a directory listing
	// (default 1000).
	TreePage int
	// Snapshots streams raw files and tar.gz/zip snapshots in the git
	// handler's process slots (githttp.NewHandler's handler); nil: neither is
	// served.
	Snapshots githttp.Snapshots
	// ClientIP names a request's client for the per-client render bound:
	// the server passes core/clientip's; nil takes the socket's peer.
	ClientIP func(*http.Request) string
}

func (o *Options) defaults() {
	if o.WebClient == "" {
		o.WebClient = "https://gitworkshop.dev"
	}
	o.WebClient = strings.TrimSuffix(o.WebClient, "/")
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 512 << 10
	}
	if o.MaxDiffBytes <= 0 {
		o.MaxDiffBytes = 512 << 10
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	if o.PerPage <= 0 {
		o.PerPage = 50
	}
	if o.MaxGitReads <= 0 {
		o.MaxGitReads = 4
	}
	if o.MaxRenders <= 0 {
		o.MaxRenders = 2
	}
	if o.MaxRendersPerClient <= 0 {
		o.MaxRendersPerClient = 1
	}
	if o.RenderBudget <= 0 {
		o.RenderBudget = 5 * time.Second
	}
	if o.TreePage <= 0 {
		o.TreePage = 1000
	}
	if o.ClientIP == nil {
		o.ClientIP = clientip.Peer
	}
}

// Pages serves the HTML pages.
type Pages struct {
	opts  Options
	log   hclog.Logger
	clk   clock.Clock
	cache *cache
	slots chan struct{} // one per git process running for a page
	// waiting counts views waiting for a git slot
	waiting prometheus.Gauge
	// gitReads counts the git processes run, by command
	gitReads *prometheus.CounterVec
	renders  *renderPool
}

// New builds the pages.
func New(opts Options, e env.Env) (*Pages, error) {
	if opts.Repos == nil || opts.Events == nil || opts.Roster == nil {
		return nil, errors.New("pages: Repos, Events and Roster are required")
	}
	opts.defaults()
	e = e.OrDefaults()
	p := &Pages{opts: opts, log: e.Log, clk: e.Clock, cache: newCache(opts.CacheBytes), slots: make(chan struct{}, opts.MaxGitReads)}
	p.waiting = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "grasp_pages_git_waiting",
		Help: "Page views waiting for one of the git processes pages may run at once (pages.MaxGitReads).",
	})
	p.gitReads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grasp_pages_git_reads_total",
		Help: "Git processes run for pages, by git command.",
	}, []string{"command"})
	p.renders = newRenderPool(e.Clock, opts.RenderBudget, opts.MaxRenders, opts.MaxRendersPerClient)
	for _, c := range append([]prometheus.Collector{p.waiting, p.gitReads}, p.renders.collectors()...) {
		if err := e.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("pages: register metrics: %w", err)
		}
	}
	return p, nil
}

// Shown is the one decision whether a repository is listed on the landing
// page and has pages: it is hosted here and not private (GRASP-08). A
// private repository's pages read as a repository that does not exist, so
// they reveal nothing (browsers send no NIP-98 token).
func (p *Pages) Shown(ctx context.Context, repo nip34.RepoRef) bool {
	return p.opts.Repos.Exists(repo) && (p.opts.Listed == nil || p.opts.Listed(ctx, repo))
}

// ServeHTTP answers a GET or HEAD for a path with the base path stripped.
func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, OPTIONS")
		p.errorPage(w, r, http.StatusMethodNotAllowed, "Only GET and HEAD are served here.")
		return
	}
	path := r.URL.EscapedPath()
	switch path {
	case "/":
		p.landing(w, r)
		return
	case "/icon.png", "/favicon.ico":
		serveIcon(w, r)
		return
	case "/publishing":
		p.guide(w, r)
		return
	}
	repo, sub, err := git.ParseRepoPath(path)
	if err != nil || !p.Shown(r.Context(), repo) {
		p.notFound(w, r)
		return
	}
	// every page of the repository names its feeds in its head
	p.repoRoute(w, r.WithContext(context.WithValue(r.Context(), shownRepoKey{}, p.repoPath(repo))), repo, sub)
}

// shownRepoKey carries, in a request's context, the URL path of the
// repository whose page it asks for: the layout links its Atom feeds.
type shownRepoKey struct{}
