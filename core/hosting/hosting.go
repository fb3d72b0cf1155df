package hosting

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/roster"
)

// Hunter is the git-data hunter as the effects use it (*hunt.Hunter).
type Hunter interface {
	Need(n hunt.Need)
	ForgetEvent(repo nip34.RepoRef, eventID string)
}

// Options are the collaborators the effects act through.
type Options struct {
	// Events is the main event store (read only: announcements, states).
	Events policy.Events
	// Purgatory holds the events waiting for git data.
	Purgatory *purgatory.Purgatory
	// Repos is the bare-repository store.
	Repos *git.Repos
	// Rules re-check every released event (bans and deletions made while it
	// was held still apply).
	Rules policy.Pipeline
	// Publish stores and broadcasts a released event (relay.Publish).
	Publish func(ctx context.Context, evt *nostr.Event) error
	// Hunter fetches missing git data from other servers; nil: none.
	Hunter Hunter
	// Roster reads announcements by author and applies the maintainer rule;
	// share the one policy uses. nil builds one over Events and Purgatory.
	Roster *roster.Source
	// Ingest runs an event through the whole write path again
	// (relay.Accept): recently rejected states are re-evaluated when an
	// announcement of their identifier changes. nil: no re-evaluation.
	Ingest func(ctx context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result
	// Archive is the GRASP-05 scope: pushes to read-only archives are
	// refused (ReadOnly) and archived repositories counted and logged;
	// nil: archive mode off.
	Archive *archive.Scope
	// Spawn runs work after the current request, owned by the server so it
	// never outlives the store; nil runs it on its own goroutine.
	Spawn func(func(ctx context.Context))
	// Service is this server's public identity: which /prs/ endpoint a PR
	// names (GRASP-06, prs.go).
	Service nip34.Service
	// PRsTTL removes a GRASP-06 /prs/ repository whose last push or PR
	// event is older, unless its PR is merged here (prs_quota.go); 0 keeps
	// them.
	PRsTTL time.Duration
}

// Hosting carries out the GRASP-01 effects. Build it with New.
type Hosting struct {
	events  policy.Events
	purg    *purgatory.Purgatory
	repos   *git.Repos
	rules   policy.Pipeline
	publish func(ctx context.Context, evt *nostr.Event) error
	hunter  Hunter
	roster  *roster.Source
	ingest  func(ctx context.Context, evt *nostr.Event, meta policy.Meta) outcome.Result
	spawn   func(func(ctx context.Context))
	archive *archive.Scope
	clk     clock.Clock
	log     hclog.Logger
	service nip34.Service
	prsTTL  time.Duration

	// prsEvents counts GRASP-06 effects: released, mirrored, removed.
	prsEvents *prometheus.CounterVec
}

// New builds the effects from opts; e names the logger "hosting" by its caller.
func New(opts Options, e env.Env) (*Hosting, error) {
	if opts.Events == nil || opts.Purgatory == nil || opts.Repos == nil || opts.Rules == nil || opts.Publish == nil {
		return nil, errors.New("hosting: Events, Purgatory, Repos, Rules and Publish are required")
	}
	e = e.OrDefaults()
	h := &Hosting{
		events: opts.Events, purg: opts.Purgatory, repos: opts.Repos, rules: opts.Rules,
		publish: opts.Publish, hunter: opts.Hunter, spawn: opts.Spawn, clk: e.Clock, log: e.Log,
		roster: opts.Roster, ingest: opts.Ingest, archive: opts.Archive,
		service: opts.Service, prsTTL: opts.PRsTTL,
		prsEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "prs", Name: "events_total",
			Help: "GRASP-06 /prs/ effects: PR events released through a /prs/ push, refs mirrored into an owner's repository, /prs/ repositories removed for having no ref, expired: removed with their data after prs_ttl unused.",
		}, []string{"what"}),
	}
	if e.Metrics != nil {
		if err := e.Metrics.Register(h.prsEvents); err != nil {
			return nil, fmt.Errorf("hosting: register metrics: %w", err)
		}
	}
	if h.roster == nil {
		var err error
		if h.roster, err = roster.New(roster.Options{Events: opts.Events, Held: opts.Purgatory}, env.Env{Clock: e.Clock, Log: e.Log.Named("roster")}); err != nil {
			return nil, fmt.Errorf("hosting: %w", err)
		}
	}
	if h.spawn == nil {
		h.spawn = func(fn func(context.Context)) { go fn(context.Background()) }
	}
	return h, nil
}
