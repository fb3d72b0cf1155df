package policy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// The purgatory OK texts have one owner, here: MsgPurgatory answers events
// held until their git data (or the repository they belong to) arrives,
// MsgInPurgatory an event purgatory already holds (G01-P6), and
// MsgPRPurgatory a PR held until its tip commit is pushed (G01-P4).
const (
	MsgPurgatory   = "purgatory: won't be served until git data arrives"
	MsgInPurgatory = "duplicate: in purgatory"
)

// MsgPRPurgatory is the OK text of a PR or PR update (id) held until commit
// is pushed: ngit-grasp's wording, which clients already show, and where
// the push goes.
func MsgPRPurgatory(commit, id string) string {
	return "purgatory: PR event stored, waiting for git push with commit " + commit + " to refs/nostr/" + id
}

// Rules is the GRASP acceptance pipeline: Pre chain, the GRASP-01 rules,
// then the operator's plugin chain. It implements Pipeline.
type Rules struct {
	opts    Options
	events  Events
	heldSrc Held
	git     GitData
	log     hclog.Logger
	clk     clock.Clock
	roster  *roster.Source

	eventBlack map[string]bool
	repoWhite  repoList
	repoBlack  repoList
	depth      int

	decisions *prometheus.CounterVec
}

var _ Pipeline = (*Rules)(nil)

// New builds the GRASP pipeline. opts.Events is required; Held and Git may
// be nil only in setups without purgatory or git (everything needing them
// is then held or treated as absent).
func New(opts Options, e env.Env) (*Rules, error) {
	if opts.Events == nil {
		return nil, errors.New("policy: Options.Events is required")
	}
	if opts.Service.Host == "" {
		return nil, errors.New("policy: Options.Service is not set (parse the public URL with nip34.ParseService)")
	}
	e = e.OrDefaults()
	r := &Rules{opts: opts, events: opts.Events, heldSrc: opts.Held, git: opts.Git, log: e.Log, clk: e.Clock, roster: opts.Roster}
	var err error
	if r.roster == nil {
		// A pipeline built alone (tests, plugin test) reads its own roster;
		// the server shares one with hosting.
		if r.roster, err = roster.New(roster.Options{Events: opts.Events, Held: heldOrNil(opts.Held)}, env.Env{Clock: e.Clock, Log: e.Log.Named("roster")}); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
	}
	if r.eventBlack, err = parseKeyList(opts.EventBlacklist); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if r.repoWhite, err = parseRepoList(opts.RepoWhitelist); err != nil {
		return nil, fmt.Errorf("policy: whitelist: %w", err)
	}
	if r.repoBlack, err = parseRepoList(opts.RepoBlacklist); err != nil {
		return nil, fmt.Errorf("policy: blacklist: %w", err)
	}
	if r.opts.Archive == nil {
		if r.opts.Archive, err = archive.New(archive.Options{Service: opts.Service}, env.Env{}); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
	}
	r.depth = opts.MaxReferenceDepth
	if r.depth <= 0 {
		r.depth = 2
	}
	r.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grasp_policy_decisions_total",
		Help: "Acceptance decisions by event class and outcome.",
	}, []string{"class", "outcome"})
	if err := e.Metrics.Register(r.decisions); err != nil {
		return nil, fmt.Errorf("policy: register metrics: %w", err)
	}
	return r, nil
}

// Decide runs the pipeline for one event.
func (r *Rules) Decide(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	d := r.decide(ctx, evt, meta)
	r.decisions.WithLabelValues(kindClass(evt.Kind), d.Outcome.String()).Inc()
	if r.log.IsDebug() {
		r.log.Debug("decision", "id", evt.ID, "kind", evt.Kind, "source", meta.Source, "outcome", d.Outcome, "msg", d.Msg, "effects", fmt.Sprint(d.Effects))
	}
	return d
}

func (r *Rules) decide(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	if d, stop := runChain(ctx, r.opts.Pre, evt, meta); stop {
		return d
	}
	if r.opts.RelayKey != "" && evt.PubKey == r.opts.RelayKey {
		return r.relayKey(ctx, evt, meta)
	}
	if r.eventBlack[evt.PubKey] {
		return reject("blocked: event author %s is blacklisted on this server", nip34.Npub(evt.PubKey))
	}
	if evt.Kind == nip34.KindDeletion {
		// NIP-09 requests are always accepted; purgatory applies them
		// to held entries, the store to stored ones.
		return r.plugins(ctx, evt, meta, Decision{Outcome: Store})
	}
	// Whether the author deleted evt is the relay's question, asked for
	// every write whatever its source (relay.deletedByAuthor).
	return r.plugins(ctx, evt, meta, r.byKind(ctx, evt, meta))
}

// byKind is the GRASP rule of evt's kind.
func (r *Rules) byKind(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	var d Decision
	switch {
	case evt.Kind == nip34.KindAnnouncement:
		d = r.announcement(ctx, evt, meta)
	case evt.Kind == nip34.KindState:
		d = r.state(ctx, evt, meta)
	case evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate:
		d = r.pr(ctx, evt, meta)
	case evt.Kind == nip34.KindGraspList:
		if _, err := nip34.ParseGraspList(evt); err != nil {
			d = reject("invalid: %v", err)
		} else {
			d = Decision{Outcome: Store}
		}
	case evt.Kind == nip34.KindPrivateGraspList:
		// GRASP-08 discovery: the content is encrypted to its author; it
		// is served to its authenticated author alone (core/visibility).
		d = Decision{Outcome: Store}
	case evt.Kind == kindMetadata || evt.Kind == kindRelayList:
		d = r.profile(ctx, evt)
	case evt.Kind == nip34.KindPinnedRepos || evt.Kind == nip34.KindFollowAuthors || evt.Kind == nip34.KindFollowRepos:
		d = r.personalList(ctx, evt, meta)
	case nip34.IsModeration(evt):
		d = r.moderation(ctx, evt, meta)
	case nip34.IsAnnotation(evt.Kind):
		var stop bool
		if d, stop = r.annotation(ctx, evt); !stop {
			d = r.related(ctx, evt, meta)
		}
	case evt.Kind == nip34.KindReview:
		var stop bool
		if d, stop = r.review(ctx, evt); !stop {
			d = r.related(ctx, evt, meta)
		}
	default:
		d = r.related(ctx, evt, meta)
	}
	return d
}

// relayKey decides about an event signed by the relay's own key
// (relay.pubkey): operators' CI publishes with it (ngit-ci's job results,
// statuses, the relay's profile and relay list), so it is always accepted
// (issue 10 part 6), once the Pre chain (the operator's NIP-86 lists) has
// passed it: neither the event blacklist, nor the reference rules (an event must reference an
// accepted repository), nor the operator's plugin chain (rate limits, spam
// words) refuse it. It is held, not stored, where the rules hold it: an
// event waiting with a held repository is not served before it.
//
// Announcements, states and PRs keep their own rules: those decide which
// repositories this server hosts and which refs a push may set (the
// maintainer set, the listing of this service), and a key that is not a
// repository's maintainer must not gain push authority by being the
// relay's. Their rules never judge the author's trustworthiness, only the
// repository's, so "always accepted" has nothing to lift there.
func (r *Rules) relayKey(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	if evt.Kind == nip34.KindDeletion {
		return Decision{Outcome: Store}
	}
	d := r.byKind(ctx, evt, meta)
	switch evt.Kind {
	case nip34.KindAnnouncement, nip34.KindState, nip34.KindPR, nip34.KindPRUpdate:
		return d
	}
	if d.Outcome == Rejected {
		return Decision{Outcome: Store}
	}
	return d
}

// plugins runs the operator chain over events the GRASP rules accepted.
func (r *Rules) plugins(ctx context.Context, evt *nostr.Event, meta Meta, d Decision) Decision {
	if d.Outcome != Store && d.Outcome != Hold {
		return d
	}
	meta.Archived = d.Archived
	if len(r.opts.Plugins) > 0 && r.opts.Usage != nil {
		remote := ""
		if meta.Source == SourceClient {
			remote = meta.Remote
		}
		u := r.opts.Usage(evt.PubKey, remote)
		meta.Usage = &u
	}
	if pd, stop := runChain(ctx, r.opts.Plugins, evt, meta); stop {
		return pd
	}
	return d
}

func runChain(ctx context.Context, c Chain, evt *nostr.Event, meta Meta) (Decision, bool) {
	if len(c) == 0 {
		return Decision{}, false
	}
	v := c.Accept(ctx, evt, meta)
	switch v.Action {
	case Reject:
		return Decision{Outcome: Rejected, Msg: withPrefix(v.Msg)}, true
	case ShadowReject:
		return Decision{Outcome: Shadow, Msg: v.Msg}, true
	}
	return Decision{}, false
}

var nip01Prefixes = []string{"duplicate:", "pow:", "blocked:", "rate-limited:", "invalid:", "restricted:", "mute:", "error:", "auth-required:"}

// withPrefix makes sure a plugin's reason carries a NIP-01 prefix, so
// clients can tell a policy refusal from a malformed event.
func withPrefix(msg string) string {
	for _, p := range nip01Prefixes {
		if strings.HasPrefix(msg, p) {
			return msg
		}
	}
	if msg == "" {
		return "blocked: refused by the operator's policy"
	}
	return "blocked: " + msg
}

func reject(format string, args ...any) Decision {
	return Decision{Outcome: Rejected, Msg: fmt.Sprintf(format, args...)}
}

// internal turns a failed lookup into a retryable refusal; the event is
// neither stored nor held, so nothing is corrupted.
func (r *Rules) internal(what string, evt *nostr.Event, err error) Decision {
	r.log.Error("policy lookup failed", "what", what, "id", evt.ID, "kind", evt.Kind, "error", err)
	return reject("error: could not %s, try again later", what)
}

func hold(effects ...Effect) Decision {
	return Decision{Outcome: Hold, Msg: MsgPurgatory, Effects: effects}
}

// kindClass keeps the metric's label set small and fixed.
func kindClass(kind int) string {
	switch {
	case kind == nip34.KindAnnouncement:
		return "announcement"
	case kind == nip34.KindState:
		return "state"
	case kind == nip34.KindPR || kind == nip34.KindPRUpdate:
		return "pr"
	case kind == nip34.KindIssue:
		return "issue"
	case kind == nip34.KindPatch:
		return "patch"
	case nip34.IsStatusKind(kind):
		return "status"
	case kind == nip34.KindComment:
		return "comment"
	case kind == nip34.KindDeletion:
		return "deletion"
	case kind == nip34.KindGraspList:
		return "grasp_list"
	case kind == nip34.KindPrivateGraspList:
		return "private_grasp_list"
	case kind == kindMetadata || kind == kindRelayList:
		return "profile"
	}
	return "other"
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// heldOrNil keeps a nil Held a nil interface for the roster.
func heldOrNil(h Held) roster.Held {
	if h == nil {
		return nil
	}
	return h
}
