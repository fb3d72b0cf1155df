package githttp

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/refusals"
	"github.com/hashicorp/go-hclog"
)

// Authority supplies what push authorisation needs from the event side.
// The lead wires it to purgatory and the store.
type Authority interface {
	// States returns the authorised state events (kind 30618 by the
	// maintainer set of the repository's owner) for repo, from purgatory and
	// the store alike.
	States(ctx context.Context, repo nip34.RepoRef) ([]StateCandidate, error)
	// PRTip returns the `c` tip of a known PR or PR-update event.
	PRTip(ctx context.Context, eventID string) (tip string, known bool, err error)
}

// PushResult describes a push that receive-pack applied completely.
type PushResult struct {
	Repo    nip34.RepoRef
	Updates []git.RefUpdate
	// StateEventID is the state the repository is now aligned with; "" when
	// the push touched only refs/nostr/* or changed nothing.
	StateEventID string
	State        *StateCandidate
	// Placeholders are refs/nostr/<id> refs pushed before their PR event:
	// record them with a TTL (G01-G5b/f), with Remote (the client IP) and
	// PlaceholderBytes (what the push brought) for the placeholder quotas.
	Placeholders     []Placeholder
	Remote           string
	PlaceholderBytes int64
}

// PlaceholderQuota bounds refs/nostr/<id> placeholders, which anyone may
// push before their PR event exists (audit 2026-11, F02).
type PlaceholderQuota interface {
	// ReservePlaceholders admits a push from ip creating placeholders for
	// ids in repo, before git runs; an error's text is what the client
	// sees. The reservation holds until OnPush has recorded them.
	ReservePlaceholders(repo nip34.RepoRef, ip string, ids []string) (PlaceholderReservation, error)
}

// PlaceholderReservation is a placeholder push in progress.
type PlaceholderReservation interface {
	// Charge counts n more bytes of the push; an error stops the push (its
	// text is what the client sees).
	Charge(n int64) error
	Bytes() int64
	Release()
}

// Hooks receives post-push notifications (release from purgatory,
// propagation to other maintainers' repositories with Repos.Propagate).
type Hooks interface {
	OnPush(ctx context.Context, res PushResult)
}

// Options configures the smart-HTTP handler. Zero values pick the defaults.
type Options struct {
	// Repos holds the repositories served (required).
	Repos *git.Repos
	// Authority answers what push authorisation needs (required).
	Authority Authority
	// CaughtUp, with several instances on one store, returns once this
	// instance has followed what the others committed before it was
	// called (store.CaughtUp): a push asks it before its first decision,
	// so a state or PR another instance has just answered OK true to
	// authorises it here too; nil: this instance is alone.
	CaughtUp func(ctx context.Context) error
	// Hooks hears about applied pushes; nil: nobody.
	Hooks Hooks
	// Placeholders bounds refs/nostr placeholder pushes; nil: unbounded.
	Placeholders PlaceholderQuota
	// PRsQuota bounds GRASP-06 /prs/ data (prs_quota.go); nil: unbounded.
	PRsQuota PRsQuota
	// CheckSpace, before a push starts git, returns why the server cannot
	// take more data (its text is the client's answer), nil when it can
	// (the free-space watermark, diskspace.Guard.Check); nil: no check.
	CheckSpace func() error
	// MaxGzipBytes bounds the decompressed size of a gzip request body, and
	// any upload-pack request body (default 256 MiB); beyond it the request
	// is refused.
	MaxGzipBytes int64
	// MaxPushBytes bounds a receive-pack request body (default 0: unbounded).
	MaxPushBytes int64
	// MaxCommandBytes bounds the ref-update command list read before a push
	// is authorised (default 1 MiB), MaxCommands its number of commands
	// (default 10000).
	MaxCommandBytes int
	MaxCommands     int
	// MaxDuration stops a receive-pack that runs longer (default 1 h);
	// MaxFetchDuration an upload-pack or advertisement (default 30 min).
	MaxDuration      time.Duration
	MaxFetchDuration time.Duration
	// MaxProcesses bounds the git processes serving requests at once
	// (default 32); a request beyond it waits up to QueueWait (default
	// 30 s; < 0 does not wait), then is refused. MaxProcessesPerIP bounds them per client IP
	// (default 8); beyond it a request is refused at once.
	MaxProcesses      int
	MaxProcessesPerIP int
	QueueWait         time.Duration
	// MinBodyBytes must arrive in every BodyRateWindow spent waiting for a
	// request body, or the request is cut (defaults 16 KiB and 30 s;
	// MinBodyBytes < 0 disables the check).
	MinBodyBytes   int64
	BodyRateWindow time.Duration
	// ClientIP names the client of a request for the per-IP limits: the
	// server passes core/clientip's, which knows its trusted proxies; nil
	// takes the socket's peer.
	ClientIP func(r *http.Request) string
	// RefusalLog counts refused requests and pushes for the operator's
	// per-minute line and budgets the push refusals' own lines
	// (core/refusals); nil: not counted, every refusal logged.
	RefusalLog *refusals.Log
	// PackWindowMemory and PackThreads bound pack-objects' memory and CPU
	// per upload-pack (defaults "100m" and 1).
	PackWindowMemory string
	PackThreads      int
	// Service is this server's public URL (the NIP-98 `u` of a private
	// repository is its clone URL there); zero: the request's own host.
	Service nip34.Service
	// ReadOnly says why pushes to repo are refused although the repository
	// is served (a read-only GRASP-05 archive: core/hosting asks
	// core/archive), "" when they are not; nil: never. The text is the
	// client's git error.
	ReadOnly func(ctx context.Context, repo nip34.RepoRef) string
	// Private says who may read a private repository (GRASP-08, NIP-98 on
	// every request: nip98.go); nil: every repository is public.
	Private Private
	// PRs serves GRASP-06 /prs/ repositories (prs.go); nil: GRASP-06 is off
	// and every /prs/ path is a 404 (G06-0).
	PRs PRsHost
	// MaxArchiveFiles and MaxArchiveBytes bound a snapshot (Snapshots,
	// archive.go) by what it would hold, checked before git writes it
	// (defaults 100,000 files and 1 GiB).
	MaxArchiveFiles int
	MaxArchiveBytes int64
	// Refusals remembers refused pushes for the repository pages; nil:
	// nothing is remembered.
	Refusals *Refusals
}

func (o *Options) defaults() {
	if o.MaxGzipBytes <= 0 {
		o.MaxGzipBytes = 256 << 20
	}
	if o.MaxCommandBytes <= 0 {
		o.MaxCommandBytes = 1 << 20
	}
	if o.MaxCommands <= 0 {
		o.MaxCommands = 10000
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = time.Hour
	}
	if o.MaxFetchDuration <= 0 {
		o.MaxFetchDuration = 30 * time.Minute
	}
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = 32
	}
	if o.MaxProcessesPerIP <= 0 {
		o.MaxProcessesPerIP = 8
	}
	if o.QueueWait == 0 {
		o.QueueWait = 30 * time.Second
	}
	if o.MinBodyBytes == 0 {
		o.MinBodyBytes = 16 << 10
	}
	if o.BodyRateWindow <= 0 {
		o.BodyRateWindow = 30 * time.Second
	}
	if o.ClientIP == nil {
		o.ClientIP = clientip.Peer
	}
	if o.PackWindowMemory == "" {
		o.PackWindowMemory = "100m"
	}
	if o.PackThreads <= 0 {
		o.PackThreads = 1
	}
	if o.MaxArchiveFiles <= 0 {
		o.MaxArchiveFiles = 100_000
	}
	if o.MaxArchiveBytes <= 0 {
		o.MaxArchiveBytes = 1 << 30
	}
}

type handler struct {
	opts     Options
	repos    *git.Repos
	auth     Authority
	hooks    Hooks
	clk      clock.Clock
	log      hclog.Logger
	m        *metrics
	slots    *slots
	clientIP func(r *http.Request) string
}

// NewHandler serves /<npub>/<percent-encoded id>.git/{info/refs,
// git-upload-pack, git-receive-pack}; the repository's pages are
// core/pages', which it serves snapshots and raw files for (it implements
// Snapshots). hooks may be nil. It sets no CORS headers: the relay wraps
// every response in them.
func NewHandler(opts Options, e env.Env) http.Handler {
	opts.defaults()
	e = e.OrDefaults()
	sl := newSlots(e.Clock, opts.MaxProcesses, opts.MaxProcessesPerIP, opts.QueueWait)
	sl.refusals = opts.RefusalLog
	return &handler{
		opts:     opts,
		repos:    opts.Repos,
		auth:     opts.Authority,
		hooks:    opts.Hooks,
		clk:      e.Clock,
		log:      e.Log,
		m:        newMetrics(e.Metrics),
		slots:    sl,
		clientIP: opts.ClientIP,
	}
}

const (
	svcUpload  = "git-upload-pack"
	svcReceive = "git-receive-pack"
)

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.EscapedPath(), prsPath+"/") {
		h.servePRs(w, r)
		return
	}
	owner, id, sub, ok := git.SplitRepoPath(r.URL.EscapedPath())
	if !ok {
		http.NotFound(w, r)
		return
	}
	if authProbe(r, sub) {
		h.answerProbe(w)
		return
	}
	hex, err := git.DecodeNpub(owner)
	if err != nil {
		gitNotFound(w)
		return
	}
	repo := nip34.RepoRef{Pubkey: hex, Identifier: id}
	dir, err := h.repos.Path(repo)
	if err != nil || !h.repos.Exists(repo) {
		gitNotFound(w)
		return
	}
	if !h.authorizeRead(w, r, repo) {
		return
	}
	h.serveService(w, r, sub, repo, dir, dir)
}

// serveService answers one smart-HTTP request sub of repo: reads (refs
// advertisement, fetch) from the repository at read, a push into dir.
// They differ for a GRASP-06 /prs/ path without a repository yet, whose
// reads come from the shared empty repository.
func (h *handler) serveService(w http.ResponseWriter, r *http.Request, sub string, repo nip34.RepoRef, read, dir string) {
	switch sub {
	case "info/refs":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		h.serveInfoRefs(w, r, read)
	case svcUpload:
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		h.serveUploadPack(w, r, read)
	case svcReceive:
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		h.serveReceivePack(w, r, repo, dir)
	default:
		gitNotFound(w)
	}
}

func gitNotFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte("Git error: repository not found"))
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "invalid: method not allowed", http.StatusMethodNotAllowed)
}

func noCache(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
	h.Set("Pragma", "no-cache")
	h.Set("Expires", "Fri, 01 Jan 1980 00:00:00 GMT")
}

// protocolEnv passes a sanitised Git-Protocol header to git (protocol v2).
func protocolEnv(r *http.Request) (env []string, v2 bool) {
	p := r.Header.Get("Git-Protocol")
	if p == "" || len(p) > 256 {
		return nil, false
	}
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("=:._-", c)) {
			return nil, false
		}
	}
	for _, kv := range strings.Split(p, ":") {
		if kv == "version=2" {
			v2 = true
		}
	}
	return []string{"GIT_PROTOCOL=" + p}, v2
}

func (h *handler) serveInfoRefs(w http.ResponseWriter, r *http.Request, dir string) {
	svc := r.URL.Query().Get("service")
	if svc != svcUpload && svc != svcReceive {
		http.Error(w, "invalid: only the smart HTTP protocol is served (service=git-upload-pack or git-receive-pack)", http.StatusForbidden)
		return
	}
	start := h.clk.Now()
	env, v2 := protocolEnv(r)
	if svc == svcReceive {
		v2 = false // git has no protocol v2 push; the client never asks for it
	}
	noCache(w)
	w.Header().Set("Content-Type", "application/x-"+svc+"-advertisement")
	if r.Method == http.MethodHead {
		// Same headers as GET, no body, and no git process (G01-G8).
		w.WriteHeader(http.StatusOK)
		h.m.ops.WithLabelValues("ls", "ok").Inc()
		return
	}
	var preamble []byte
	if !v2 {
		preamble = append(pktLine("# service="+svc+"\n"), pktFlush...)
	}
	release, refused := h.slots.acquire(r.Context(), h.clientIP(r))
	if refused != nil {
		// git prints a text/plain answer to its first request as "remote:"
		// lines.
		h.m.refused.WithLabelValues(refused.reason).Inc()
		w.Header().Del("Content-Type")
		if refused.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "60")
		}
		http.Error(w, refused.Error(), refused.status)
		h.finish("ls", start, runResult{rejected: true})
		return
	}
	defer release()
	res := h.runService(w, r, runSpec{
		kind: "ls", svc: svc, dir: dir, advertise: true, env: env, preamble: preamble,
		contentType: "application/x-" + svc + "-advertisement",
		maxDuration: h.opts.MaxFetchDuration,
	})
	h.finish("ls", start, res)
}

func (h *handler) finish(kind string, start time.Time, res runResult) {
	result := "ok"
	if res.rejected {
		result = "rejected"
	} else if res.err != nil {
		result = "error"
		h.log.Warn("git operation failed", "kind", kind, "error", res.err)
	}
	h.m.ops.WithLabelValues(kind, result).Inc()
	h.m.bytes.WithLabelValues("in", kind).Add(float64(res.in))
	h.m.bytes.WithLabelValues("out", kind).Add(float64(res.out))
	h.m.duration.WithLabelValues(kind).Observe(h.clk.Since(start).Seconds())
}
