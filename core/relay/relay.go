// Package relay owns the Nostr relay and the HTTP surface of a grasp server:
// the write path every event takes (client, sync and purgatory release),
// the NIP-11 document, the routing of every HTTP request (websocket, NIP-11,
// git paths, landing page, CORS) and our own http.Server with graceful
// shutdown.
//
// It is the single place where an event meets the acceptance pipeline: the
// pipeline decides once per event, and the decision travels with the event
// to its effects (Effects.Hold, Effects.Apply) and to the OK the client
// gets. It never decides what is acceptable itself (that is core/policy),
// never touches git data (core/git, served by core/githttp mounted with
// HandleGit), and never speaks the websocket protocol (core/gate, which it
// builds and feeds).
//
// # Why the write path does not run through khatru
//
// khatru v0.19.1 was the write pipeline until issue 28: Ingest called its
// AddEvent only to reach its RejectEvent and StoreEvent/ReplaceEvent hooks.
// Its pipeline knows "stored" and "refused", nothing between: an OK true
// with a message (held, shadowed, duplicate) had to be answered by the
// store hook with eventstore.ErrDupEvent and carried back through a
// context value; its deletion check queries tag keys "#e"/"#a" that no
// store indexes; khatru.NewRelay starts an expiration goroutine on
// context.Background that nothing can stop. So the path is ours (Accept,
// adding.go): the cheap limits, the duplicate and deletion checks, the
// decision and its effect, with the result as an outcome.Result and the
// OK text written by outcome alone. Going through AddEvent cost more than
// calling the same steps directly (BenchmarkWritePath, figures in
// docs/architecture.md). khatru remains the bench's baseline relay
// (cmd/grasp-bench) and the peer of the tests; the gate serves the
// websocket (see package gate for why).
package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/gate"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/refusals"
)

// Effects carries out what the pipeline decided, with the decision in hand.
type Effects interface {
	// Hold keeps evt in purgatory as d says; msg is the OK text
	// ("purgatory: ..." or "duplicate: in purgatory").
	Hold(ctx context.Context, evt *nostr.Event, d policy.Decision, meta policy.Meta) (msg string, err error)
	// Apply carries out d's effects: after evt is durably stored (Store),
	// or at once for a Rejected decision that has effects (evicting a held
	// announcement whose replacement dropped this server). Deletions
	// (kind 5) reach Apply after they are stored.
	Apply(ctx context.Context, evt *nostr.Event, d policy.Decision)
}

// Options configures the relay. The zero value of every setting works:
// limits take config's defaults and the public URL is derived per request.
type Options struct {
	Name        string
	Description string
	PubkeyHex   string // operator pubkey advertised in NIP-11 (hex)
	Contact     string
	IconURL     string
	// PublicURL is the http(s) origin clients use, e.g. "http://127.0.0.1:7334".
	// The relay URL is derived from it (http -> ws, https -> wss).
	PublicURL string
	// PublicURLAliases are the service's further public URLs (a .onion, a
	// second name): routed, accepted in NIP-42 AUTH, listed in NIP-11.
	PublicURLAliases []string
	SoftwareURL      string
	Version          string
	// SupportedGrasps is advertised as supported_grasps (e.g. "GRASP-01").
	SupportedGrasps []string
	// AcceptanceCriteria is the human-readable repo_acceptance_criteria.
	AcceptanceCriteria string
	// Curation is advertised as curation; "" omits the key (GRASP-01 N4).
	Curation string
	// Limits bound events, filters and connections; zero fields take
	// config's defaults. The event store applies the query limits.
	Limits config.Limits
	// ShutdownGrace bounds how long Serve waits for in-flight writes and HTTP
	// requests after its context ends; 0 means 30 s.
	ShutdownGrace time.Duration

	// Events is the main event store, already Init'ed; required. The caller
	// closes it after Serve returns.
	Events eventstore.Store
	// Shared is set when other grasp instances write the same store
	// (store.Store.Shared, PostgreSQL): a deletion another instance stored
	// is then honoured here too, because every write asks the store
	// whether its author deleted it instead of trusting this process's
	// index of deletions (deleting.go).
	Shared bool
	// Pipeline decides about every event; nil stores everything.
	Pipeline policy.Pipeline
	// Effects carries out decisions; required only if the pipeline can
	// answer Hold or decide effects.
	Effects Effects
	// Private decides who may read and write private repositories and
	// events (GRASP-08; core/visibility); the gate enforces it. nil:
	// nothing is private.
	Private gate.Private
	// Record is GRASP-08's decision at acceptance (core/visibility's
	// Record): called for every event about to be stored or held, before
	// it is; an error refuses the event with its text. nil: none.
	Record func(ctx context.Context, evt *nostr.Event) error
	// ClientIP names a request's client for the gate's per-IP limits and
	// the pipeline's Meta.Remote (core/clientip); nil: the socket's peer.
	ClientIP func(*http.Request) string
	// AuthRequired advertises NIP-11 limitation.auth_required: nothing is
	// served before NIP-42 AUTH (service-wide private mode).
	AuthRequired bool
	// PushLimits are the git push limits advertised in NIP-11 limitation
	// (the placeholder quotas of refs/nostr/<id> and /prs/ pushes, which
	// anyone may make; issue 12 part 4); enforced by core/githttp and
	// core/purgatory.
	PushLimits PushLimits
	// RefusalLog counts refused clients for the operator's per-minute line
	// (core/refusals): connections over the caps, blocked addresses,
	// "rate-limited:" OKs, refused announcements; nil: not counted.
	RefusalLog *refusals.Log
	// PRsLimits are the GRASP-06 /prs/ data quotas advertised in NIP-11
	// limitation (audit F20); enforced by core/purgatory.
	PRsLimits PRsLimits
}

// PushLimits are what one git push, and the refs/nostr/<id> placeholders
// waiting for their PR event, may hold: per repository, per pubkey (a
// repository's owner, or the npub of a /prs/ path) and per client IP. Zero
// is unbounded (and not advertised).
type PushLimits struct {
	MaxPushBytes                                        int64
	PlaceholdersPerRepo, PerPubkey, PerIP               int
	PlaceholderBytesPerRepo, BytesPerPubkey, BytesPerIP int64
	PlaceholderTTLSeconds                               int64
}

// PRsLimits are what GRASP-06 /prs/ repositories may hold: bytes and
// repositories in total, per client IP and per npub of the path, and how
// long unused data is kept. Zero is unbounded (and not advertised).
type PRsLimits struct {
	Bytes, BytesPerIP, BytesPerPubkey int64
	Repos, ReposPerIP, ReposPerPubkey int
	TTLSeconds                        int64
}

// Server is a configured relay plus its HTTP routing.
type Server struct {
	opts     Options
	limits   config.Limits
	clock    clock.Clock
	log      hclog.Logger
	store    eventstore.Store
	pipeline policy.Pipeline
	effects  Effects
	metrics  *metrics

	gate    *gate.Gate
	wsURL   string
	nip11   []byte
	nip05   []byte // nil: no relay key, the well-known path is a 404
	handler http.Handler

	// svc carries the base path every route lives under ("" at the root).
	svc nip34.Service

	op         operatorHooks // operator.go
	infoMu     sync.Mutex
	configured struct{ name, description, icon string }

	gitMu sync.RWMutex
	git   http.Handler
	pages http.Handler
	shown func(context.Context, nip34.RepoRef) bool // NIP-AD: repositories answered (nipad.go)

	storedMu sync.RWMutex
	onStored []func(context.Context, *nostr.Event)

	deletions *tombstones
	writes    *writeGate
}

// New configures the write path, the gate and the HTTP routing. It does not listen;
// call Serve.
func New(opts Options, e env.Env) (*Server, error) {
	if opts.Events == nil {
		return nil, errors.New("relay: Options.Events is required")
	}
	e = e.OrDefaults()
	limits := opts.Limits.WithDefaults()
	if limits.DefaultLimit > limits.MaxLimit {
		return nil, fmt.Errorf("relay: limits: DefaultLimit %d exceeds MaxLimit %d", limits.DefaultLimit, limits.MaxLimit)
	}
	var wsURL string
	var svc nip34.Service
	if opts.PublicURL != "" {
		var err error
		svc, err = nip34.ParseService(opts.PublicURL, opts.PublicURLAliases...)
		if err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		wsURL = svc.RelayURL()
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 30 * time.Second
	}
	m, err := newMetrics(e.Metrics)
	if err != nil {
		return nil, fmt.Errorf("relay: metrics: %w", err)
	}
	s := &Server{
		opts:     opts,
		limits:   limits,
		clock:    e.Clock,
		log:      e.Log,
		store:    opts.Events,
		pipeline: opts.Pipeline,
		effects:  opts.Effects,
		metrics:  m,
		wsURL:    wsURL,
		svc:      svc,
		writes:   newWriteGate(m.inflight),
	}
	if s.pipeline == nil {
		s.pipeline = policy.AcceptAll{}
	}
	s.deletions, err = loadTombstones(context.Background(), s.store, limits.NegentropyMaxEvents, opts.Shared)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	s.gate = gate.New(gate.Options{Backend: s, Limits: limits, RelayURL: wsURL, OtherRelayURLs: otherRelayURLs(svc), Private: opts.Private, ClientIP: opts.ClientIP, RefusalLog: opts.RefusalLog}, e.Named("gate"))
	s.configured.name, s.configured.description, s.configured.icon = opts.Name, opts.Description, opts.IconURL
	s.nip11, err = s.buildNIP11()
	if err != nil {
		return nil, fmt.Errorf("relay: NIP-11 document: %w", err)
	}
	if s.nip05, err = s.buildNIP05(); err != nil {
		return nil, fmt.Errorf("relay: NIP-05 document: %w", err)
	}
	s.handler = http.HandlerFunc(s.route)
	return s, nil
}

// Handler is the whole HTTP surface: CORS, websocket, NIP-11, git, pages.
func (s *Server) Handler() http.Handler { return s.handler }

// otherRelayURLs are the relay URLs of svc's aliases.
func otherRelayURLs(svc nip34.Service) []string {
	if len(svc.Aliases) == 0 {
		return nil
	}
	return svc.RelayURLs()[1:]
}

// RelayURL is the ws(s) URL derived from Options.PublicURL ("" if unset).
func (s *Server) RelayURL() string { return s.wsURL }

// HandleGit mounts the git smart-HTTP handler: it receives every request
// githttp.Routed names (the protocol paths of a repository, and everything
// under /prs/), with the base path stripped.
func (s *Server) HandleGit(h http.Handler) {
	s.gitMu.Lock()
	s.git = h
	s.gitMu.Unlock()
}

// HandlePages mounts the HTML pages (landing page, icon, repository pages,
// 404s): every GET that is neither a websocket, git nor NIP-11, with the
// base path stripped.
func (s *Server) HandlePages(h http.Handler) {
	s.gitMu.Lock()
	s.pages = h
	s.gitMu.Unlock()
}

// OnStored registers fn to run after every event stored in the main store
// (client, sync or Publish). fn runs on the writing goroutine, before the
// client's OK is sent: it must be quick and must not block.
func (s *Server) OnStored(fn func(ctx context.Context, evt *nostr.Event)) {
	s.storedMu.Lock()
	defer s.storedMu.Unlock()
	next := make([]func(context.Context, *nostr.Event), len(s.onStored), len(s.onStored)+1)
	copy(next, s.onStored)
	s.onStored = append(next, fn)
}

func (s *Server) storedCallbacks() []func(context.Context, *nostr.Event) {
	s.storedMu.RLock()
	defer s.storedMu.RUnlock()
	return s.onStored
}

// Revoke ends what the connections authenticated as keys have open that
// may carry private data they no longer read (GRASP-08 revocation; the
// gate's Revoke).
func (s *Server) Revoke(keys []string) { s.gate.Revoke(keys) }
