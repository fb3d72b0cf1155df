package roster

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

// Events is the store's read side (eventstore.Store satisfies it). Queries
// must close the channel when done.
type Events interface {
	QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error)
}

// Held is purgatory's read side (*purgatory.Purgatory satisfies it).
type Held interface {
	QueryHeld(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error)
}

// Options are where announcements and states are read from.
type Options struct {
	Events Events
	Held   Held // nil: no purgatory
}

// Source reads rosters. Build it once with New and share it: its metrics
// are registered once.
type Source struct {
	events Events
	held   Held
	log    hclog.Logger
	clk    clock.Clock
	empty  *prometheus.CounterVec
	refuse *prometheus.CounterVec

	rejected rejectedIndex
	listed   listings
}

// New builds a Source.
func New(opts Options, e env.Env) (*Source, error) {
	if opts.Events == nil {
		return nil, errors.New("roster: Events is required")
	}
	e = e.OrDefaults()
	s := &Source{events: opts.Events, held: opts.Held, log: e.Log, clk: e.Clock}
	s.empty = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grasp_roster_empty_total",
		Help: "Maintainer rosters resolved empty although the owner has an announcement, by reason (pending_lead, conflict, declined, discovery_bound, hop_bound).",
	}, []string{"reason"})
	s.refuse = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grasp_roster_invitee_refused_total",
		Help: "30618 states refused because their author is invited (listed by a hosted repository of the identifier) but has not listed back (maintainers-v3 reciprocity), by what was refused (state). A push realising such a state is refused because the state never became authoritative.",
	}, []string{"what"})
	for _, c := range []prometheus.Collector{s.empty, s.refuse} {
		if err := e.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("roster: register metrics: %w", err)
		}
	}
	return s, nil
}

// latestQueryLimit bounds one author's versions of one identifier read per
// query: the store keeps only the newest, purgatory at most one held.
const latestQueryLimit = 16

func (s *Source) query(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	ch, err := s.events.QueryEvents(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("query store: %w", err)
	}
	var out []*nostr.Event
	for e := range ch {
		if f.Limit == 0 || len(out) < f.Limit {
			out = append(out, e)
		}
	}
	return out, ctx.Err()
}

func (s *Source) queryHeld(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	if s.held == nil {
		return nil, nil
	}
	evs, err := s.held.QueryHeld(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("query purgatory: %w", err)
	}
	return evs, nil
}

// NoteInviteeRefused records an event (what: "state") refused because author
// is invited to owner's repository but has not listed back: the visible
// trace of legacy one-way listings losing authority under v3.
func (s *Source) NoteInviteeRefused(what string, owner, author, d string) {
	s.refuse.WithLabelValues(what).Inc()
	s.log.Info("refused: author is invited but not a confirmed maintainer (maintainers-v3: an invitee must list back)",
		"what", what, "repo", nip34.RepoRef{Pubkey: owner, Identifier: d}.URLPath(), "author", nip34.Npub(author))
}
