// Package relay owns the Nostr relay and the HTTP surface of a grasp server:
// it configures khatru (hooks, limits, the NIP-11 document), routes every
// HTTP request (websocket, NIP-11, git paths, landing page, CORS) and runs our
// own http.Server with graceful shutdown.
//
// It is the single place where a client EVENT meets the acceptance pipeline:
// the pipeline runs once per event, inside the store hooks, after khatru has
// checked the id, the signature and earlier deletions. It never decides what
// is acceptable itself (that is core/policy) and never touches git data (that
// is core/git, mounted with HandleGit).
//
// khatru's own live broadcast reads its listener list without its lock (a
// data race and a crash risk under subscription churn), so every store hook
// reports the event to khatru as a duplicate and this package broadcasts it
// from its own subscription registry instead (broadcast.go).
package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/khatru"
	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
)

// Options configures the relay. The zero value works: every unset limit takes
// its default (see DefaultLimits) and the public URL is derived per request.
type Options struct {
	Name        string
	Description string
	PubkeyHex   string // operator pubkey advertised in NIP-11 (hex)
	Contact     string
	IconURL     string
	// PublicURL is the http(s) origin clients use, e.g. "http://127.0.0.1:7334".
	// The relay URL is derived from it (http -> ws, https -> wss).
	PublicURL   string
	SoftwareURL string
	Version     string
	// SupportedGrasps is advertised as supported_grasps (e.g. "GRASP-01").
	SupportedGrasps []string
	// AcceptanceCriteria is the human-readable repo_acceptance_criteria.
	AcceptanceCriteria string
	// Curation is advertised as curation; "" omits the key (GRASP-01 N4).
	Curation string
	Limits   Limits
	// ShutdownGrace bounds how long Serve waits for in-flight writes and HTTP
	// requests after its context ends; 0 means 30 s.
	ShutdownGrace time.Duration
	Clock         clock.Clock
	Logger        hclog.Logger
	Registerer    prometheus.Registerer
}

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

// Deps are the collaborators the relay calls.
type Deps struct {
	// Events is the main event store, already Init'ed. The caller closes it
	// after Serve returns.
	Events eventstore.Store
	// Pipeline decides about every event; nil stores everything.
	Pipeline policy.Pipeline
	// Effects receives events the pipeline holds, and the decision of every
	// stored event; required only if the pipeline can answer Hold.
	Effects Effects
	// NoteOK tells the websocket front which message to put in the next OK
	// for eventID on the connection of ctx (khatru answers OK true with an
	// empty message whenever a store hook reports a duplicate). ctx is
	// khatru's connection context: ConnRequest(ctx) returns the request the
	// front handed to the backend. nil means no-op.
	NoteOK func(ctx context.Context, eventID, msg string)
	// WebsocketFront, when set, receives every websocket upgrade; it must hand
	// the upgrade on to backend (khatru's websocket endpoint).
	WebsocketFront func(backend http.Handler) http.Handler
}

// Server is a configured relay plus its HTTP routing.
type Server struct {
	opts     Options
	limits   Limits
	clock    clock.Clock
	log      hclog.Logger
	store    eventstore.Store
	pipeline policy.Pipeline
	effects  Effects
	noteOK   func(ctx context.Context, eventID, msg string)
	metrics  *metrics

	khatru  *khatru.Relay
	ws      http.Handler // websocket endpoint: the front, or khatru directly
	wsURL   string
	nip11   []byte
	handler http.Handler

	gitMu sync.RWMutex
	git   http.Handler

	storedMu sync.RWMutex
	onStored []func(context.Context, *nostr.Event)

	subs     *registry
	reqs     *reqCounter
	deletes  *decisionMemo
	writes   *writeGate
	conns    *connTracker
	hijacked *hijackTracker
}

// New configures khatru and the HTTP routing. It does not listen; call Serve.
func New(opts Options, deps Deps) (*Server, error) {
	if deps.Events == nil {
		return nil, errors.New("relay: Deps.Events is required")
	}
	limits, err := opts.Limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("relay: limits: %w", err)
	}
	wsURL, err := relayURL(opts.PublicURL)
	if err != nil {
		return nil, fmt.Errorf("relay: public URL %q: %w", opts.PublicURL, err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.New()
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 30 * time.Second
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("relay: metrics: %w", err)
	}
	s := &Server{
		opts:     opts,
		limits:   limits,
		clock:    opts.Clock,
		log:      opts.Logger,
		store:    deps.Events,
		pipeline: deps.Pipeline,
		effects:  deps.Effects,
		noteOK:   deps.NoteOK,
		metrics:  m,
		wsURL:    wsURL,
		subs:     newRegistry(),
		reqs:     newReqCounter(),
		deletes:  newDecisionMemo(4096),
		writes:   newWriteGate(m.inflight),
		conns:    newConnTracker(),
		hijacked: newHijackTracker(),
	}
	if s.pipeline == nil {
		s.pipeline = policy.AcceptAll{}
	}
	s.khatru = s.newKhatru()
	s.nip11, err = s.buildNIP11()
	if err != nil {
		return nil, fmt.Errorf("relay: NIP-11 document: %w", err)
	}
	s.ws = http.HandlerFunc(s.khatru.HandleWebsocket)
	if deps.WebsocketFront != nil {
		s.ws = deps.WebsocketFront(s.ws)
	}
	s.handler = http.HandlerFunc(s.route)
	return s, nil
}

// newKhatru wires khatru's hook slices to our store, limits and pipeline.
func (s *Server) newKhatru() *khatru.Relay {
	rl := khatru.NewRelay()
	rl.Log = s.log.Named("khatru").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	// NIP-77 is served by the websocket front with our own session loop.
	rl.Negentropy = false
	rl.MaxMessageSize = int64(s.limits.MaxMessageBytes)
	if s.opts.PublicURL != "" {
		rl.ServiceURL = strings.TrimSuffix(s.opts.PublicURL, "/")
	}
	rl.OnConnect = append(rl.OnConnect, s.conns.add)
	rl.OnDisconnect = append(rl.OnDisconnect, s.conns.remove)

	rl.RejectEvent = append(rl.RejectEvent, s.rejectEvent)
	rl.OverwriteDeletionOutcome = append(rl.OverwriteDeletionOutcome, s.deletionOutcome)
	rl.StoreEvent = append(rl.StoreEvent, func(ctx context.Context, evt *nostr.Event) error {
		return s.write(ctx, evt, false)
	})
	rl.ReplaceEvent = append(rl.ReplaceEvent, func(ctx context.Context, evt *nostr.Event) error {
		return s.write(ctx, evt, true)
	})
	rl.DeleteEvent = append(rl.DeleteEvent, s.deleteEvent)
	rl.QueryEvents = append(rl.QueryEvents, s.queryEvents)
	if c, ok := s.store.(eventstore.Counter); ok {
		rl.CountEvents = append(rl.CountEvents, c.CountEvents)
	}
	rl.OverwriteFilter = append(rl.OverwriteFilter, s.overwriteFilter)
	rl.RejectFilter = append(rl.RejectFilter, s.rejectFilter)
	rl.RejectCountFilter = append(rl.RejectCountFilter, func(ctx context.Context, f nostr.Filter) (bool, string) {
		if msg := s.checkFilter(f); msg != "" {
			return true, msg
		}
		return false, ""
	})
	return rl
}

// queryEvents is khatru's QueryEvents hook. khatru's own "was this deleted"
// lookups ask for tag keys "#e" / "#a", which no store indexes and no client
// filter can carry (the "#" is stripped when a filter is parsed): they never
// match, so they are answered without touching the store, and write() does
// the real check (deletedByAuthor).
func (s *Server) queryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	for k := range f.Tags {
		if strings.HasPrefix(k, "#") {
			ch := make(chan *nostr.Event)
			close(ch)
			return ch, nil
		}
	}
	return s.store.QueryEvents(ctx, f)
}

// Handler is the whole HTTP surface: CORS, websocket, NIP-11, git, pages.
func (s *Server) Handler() http.Handler { return s.handler }

// RelayURL is the ws(s) URL derived from Options.PublicURL ("" if unset).
func (s *Server) RelayURL() string { return s.wsURL }

// HandleGit mounts the git smart-HTTP handler: it receives every request
// git.Routed names (repository paths, and everything under /prs/).
func (s *Server) HandleGit(h http.Handler) {
	s.gitMu.Lock()
	s.git = h
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

// ConnRequest returns the HTTP request of the websocket connection behind a
// khatru hook context (nil outside a websocket connection). A websocket front
// uses it to find its own connection state when NoteOK is called.
func ConnRequest(ctx context.Context) *http.Request {
	if ws := khatru.GetConnection(ctx); ws != nil {
		return ws.Request
	}
	return nil
}

func relayURL(public string) (string, error) {
	if public == "" {
		return "", nil
	}
	u, err := url.Parse(public)
	if err != nil {
		return "", err
	}
	if u.Host == "" {
		return "", errors.New("missing host")
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("scheme must be http or https, not %q", u.Scheme)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return u.String(), nil
}
