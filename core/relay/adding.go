package relay

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip70"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/gate"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip86"
	"github.com/grasp-dev/grasp/core/nocontent"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/sigcheck"
)

// The write path's own answers.
var (
	resDuplicate = outcome.New(outcome.Duplicate, "already have this event")
	resNewer     = outcome.New(outcome.Outdated, "have a newer version of this event")
	resClosing   = outcome.New(outcome.Error, "relay is shutting down, try again later")
	resSaveFail  = outcome.New(outcome.Error, "could not save the event")
	msgClosing   = resClosing.Text()
)

// Ingest is Accept with its result as the OK frame carries it: ok and the
// message, whose NIP-01 prefix outcome.Result.Text writes. The gate and
// sync peers that only speak text call it.
func (s *Server) Ingest(ctx context.Context, evt *nostr.Event, meta policy.Meta) (ok bool, msg string) {
	r := s.Accept(ctx, evt, meta)
	return r.OK(), r.Text()
}

// Accept takes an event from a client (the gate, meta.Source "client") or a
// sync peer (meta.Source "sync" when unset): it checks the id and the
// signature, NIP-70 and the cheap limits, then writes it (write) with the
// acceptance pipeline deciding. The result says what became of it.
func (s *Server) Accept(ctx context.Context, evt *nostr.Event, meta policy.Meta) (res outcome.Result) {
	// Every event from a client or a sync peer passes here: a panic in the
	// pipeline, a plugin's glue, the store or an effect is logged with its
	// stack and answered "error:", and the process and the connection go
	// on (audit F18c). The store's commit is the last step of an OK true,
	// so nothing acknowledged is half-written.
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic while ingesting an event", "id", evt.ID, "kind", evt.Kind,
				"source", meta.Source, "panic", p, "stack", string(debug.Stack()))
			s.metrics.rejected.WithLabelValues(kindLabel(evt.Kind), "error").Inc()
			res = outcome.New(outcome.Error, "internal error while processing this event; it was logged, try again later")
		}
	}()
	// One serialisation and hash for the id and the signature (issue 27
	// part 5: the check bounds ingest).
	switch sigcheck.Event(evt) {
	case sigcheck.BadID:
		s.metrics.rejected.WithLabelValues(kindLabel(evt.Kind), "invalid").Inc()
		return outcome.New(outcome.Invalid, "id is computed incorrectly")
	case sigcheck.BadSignature:
		s.metrics.rejected.WithLabelValues(kindLabel(evt.Kind), "invalid").Inc()
		return outcome.New(outcome.Invalid, "signature is invalid")
	}
	if meta.ReceivedAt.IsZero() {
		meta.ReceivedAt = s.clock.Now()
	}
	if meta.Source == "" {
		meta.Source = policy.SourceSync
	}
	if meta.Source == policy.SourceClient {
		// NIP-70: a protected event is accepted only from its
		// authenticated author, and is never reposted inside another. A
		// connection authenticated as another key is told "auth-required:"
		// too: authenticating as the author is what would make it succeed
		// (NIP-70 says so; "restricted:" would tell the client to give up).
		if nip70.IsProtected(*evt) && meta.Authed != evt.PubKey {
			if meta.Authed == "" {
				return outcome.New(outcome.AuthRequired, "this event may only be published by its author")
			}
			return outcome.New(outcome.AuthRequired, "this event may only be published by its author; this connection is authenticated as another key")
		}
		if nip70.HasEmbeddedProtected(*evt) {
			return outcome.New(outcome.Blocked, "a protected event cannot be reposted")
		}
		// NIP-43: a join request is answered by the operator's lists and
		// never stored or relayed (NIP-70 above made sure of its author)
		if join := s.op.join.Load(); evt.Kind == nip86.KindJoinRequest && join != nil {
			return (*join)(evt)
		}
	}
	if r, refused := s.rejectEvent(evt, meta); refused {
		s.noteRefused(evt, meta, r)
		return r
	}
	if res = s.commit(ctx, evt, meta, false); !res.OK() {
		s.noteRefused(evt, meta, res)
	}
	return res
}

// Publish stores evt and broadcasts it without asking the pipeline: it is how
// purgatory releases an event whose git data arrived. Deletion rules and
// replaceable/addressable semantics still apply; Effects.Apply is not
// called (the release is the effect). It returns nil when the event is
// stored or already was, and an *outcome.Refusal when the store refused it
// (e.g. deleted meanwhile, or a newer version exists).
func (s *Server) Publish(ctx context.Context, evt *nostr.Event) error {
	if nostr.IsEphemeralKind(evt.Kind) {
		// Refused as Ingest refuses it (limits.go): no instance relays an
		// ephemeral event, so none is delivered by one instance only.
		return fmt.Errorf("publish %s: %w", evt.ID, outcome.Err(resEphemeral))
	}
	if err := s.write(ctx, evt, true); err != nil {
		return fmt.Errorf("publish %s: %w", evt.ID, err)
	}
	return nil
}

// write is commit as an error, nil for every OK true: Publish's form (a
// release, publish true) and a sync peer's (false).
func (s *Server) write(ctx context.Context, evt *nostr.Event, publish bool) error {
	meta := policy.Meta{Source: policy.SourceSync, ReceivedAt: s.clock.Now()}
	if publish {
		meta.Source = policy.SourcePurgatory
	}
	return outcome.Err(s.commit(ctx, evt, meta, publish))
}

// Deliver hands subscribers an event another grasp instance stored in the
// shared store (core/store's Follow): the OnStored callbacks learn of it
// (GRASP-08's visibility first, as for a local write), then it is
// broadcast. It is not stored, judged or acted on again: the instance that
// accepted it did that.
func (s *Server) Deliver(ctx context.Context, evt *nostr.Event) {
	for _, fn := range s.storedCallbacks() {
		fn(ctx, evt)
	}
	s.gate.Broadcast(evt)
}

// refuse counts a refusal by its reason and returns it.
func (s *Server) refuse(evt *nostr.Event, r outcome.Result) outcome.Result {
	s.metrics.rejected.WithLabelValues(kindLabel(evt.Kind), r.Kind.Prefix()).Inc()
	return r
}

// commit is the one place where the pipeline decides (unless publish: a
// release from purgatory), and where the decision is carried out with the
// event: duplicates and newer versions, deleted-by-author, the decision,
// GRASP-08's record, a deletion's targets, then store and broadcast, hold
// or shadow. Regular kinds are saved, replaceable and addressable ones
// replace their older versions.
func (s *Server) commit(ctx context.Context, evt *nostr.Event, meta policy.Meta, publish bool) outcome.Result {
	if !s.writes.begin() {
		return resClosing
	}
	defer s.writes.end()
	kind := kindLabel(evt.Kind)
	replace := !nostr.IsRegularKind(evt.Kind)

	have, newer, err := s.existing(ctx, evt, replace)
	if err != nil {
		s.log.Error("duplicate check failed", "id", evt.ID, "error", err)
		return resSaveFail
	}
	if have {
		s.metrics.outcome(kind, "duplicate")
		return resDuplicate
	}
	if newer {
		return s.refuse(evt, resNewer)
	}
	if gone, err := s.deletedByAuthor(ctx, evt); err != nil {
		s.log.Error("deletion check failed", "id", evt.ID, "error", err)
		return resSaveFail
	} else if gone {
		return s.refuse(evt, resDeleted)
	}

	// Policy's reference rule and the GRASP-08 record read the same
	// related events: one lookup for both (issue 27 part 5), shared by
	// these two calls only (nothing after them reads a stale answer).
	decideCtx := nocontent.Shared(ctx)
	d := policy.Decision{Outcome: policy.Store}
	if !publish {
		d = s.pipeline.Decide(decideCtx, evt, meta)
	}
	if d.Outcome == policy.Rejected {
		if len(d.Effects) > 0 && s.effects != nil {
			s.effects.Apply(ctx, evt, d)
		}
		if d.Msg == "" {
			return s.refuse(evt, outcome.New(outcome.Blocked, "rejected by policy"))
		}
		return s.refuse(evt, outcome.Refused(d.Msg, outcome.Blocked))
	}
	if (d.Outcome == policy.Store || d.Outcome == policy.Hold) && s.opts.Record != nil {
		// GRASP-08: privacy is decided once, before the event is durable
		// (and, for a deletion, before its targets are gone).
		if err := s.opts.Record(decideCtx, evt); err != nil {
			if r, ok := outcome.Of(err); ok && !r.OK() {
				return s.refuse(evt, r)
			}
			return s.refuse(evt, outcome.Refused(err.Error(), outcome.Error))
		}
	}
	if evt.Kind == 5 {
		// The author's own deletion is honoured also when the request is
		// shadowed or held: it harms no one else, and refusing it would
		// reveal a shadow rejection.
		if r, refused := s.deleteTargets(ctx, evt); refused {
			return s.refuse(evt, r)
		}
		s.deletions.add(evt)
	}
	switch d.Outcome {
	case policy.Store:
	case policy.Shadow:
		s.metrics.outcome(kind, "shadow")
		return outcome.Shadow(d.Msg)
	case policy.Hold:
		return s.hold(ctx, meta, evt, d)
	default:
		s.log.Error("pipeline returned an unknown outcome", "outcome", int(d.Outcome), "id", evt.ID)
		return outcome.New(outcome.Error, "could not decide about this event")
	}

	if replace {
		err = s.store.ReplaceEvent(ctx, evt)
	} else {
		err = s.store.SaveEvent(ctx, evt)
	}
	if errors.Is(err, eventstore.ErrDupEvent) {
		s.metrics.outcome(kind, "duplicate")
		return resDuplicate
	}
	if err != nil {
		s.log.Error("saving event failed", "id", evt.ID, "kind", evt.Kind, "error", err)
		return resSaveFail
	}
	s.metrics.stored.WithLabelValues(kind).Inc()
	// The callbacks first: GRASP-08's visibility learns of a private
	// announcement before the broadcast asks who may receive it.
	for _, fn := range s.storedCallbacks() {
		fn(ctx, evt)
	}
	s.gate.Broadcast(evt)
	if !publish && s.effects != nil {
		s.effects.Apply(ctx, evt, d)
	}
	return outcome.New(outcome.Stored, "")
}

func (s *Server) hold(ctx context.Context, meta policy.Meta, evt *nostr.Event, d policy.Decision) outcome.Result {
	kind := kindLabel(evt.Kind)
	if s.effects == nil {
		s.log.Error("pipeline asked to hold an event but no purgatory is configured", "id", evt.ID)
		s.metrics.rejected.WithLabelValues(kind, "error").Inc()
		return outcome.New(outcome.Error, "purgatory is not available")
	}
	msg, err := s.effects.Hold(ctx, evt, d, meta)
	var refused *policy.Refusal
	if errors.As(err, &refused) {
		return s.refuse(evt, outcome.Refused(refused.Msg, outcome.Error))
	}
	if err != nil {
		s.log.Error("holding event in purgatory failed", "id", evt.ID, "error", err)
		s.metrics.rejected.WithLabelValues(kind, "error").Inc()
		return outcome.New(outcome.Error, "could not keep the event in purgatory")
	}
	r := outcome.Accepted(msg)
	if r.Kind != outcome.Held && r.Kind != outcome.Duplicate {
		r = outcome.Accepted(policy.MsgPurgatory)
	}
	s.metrics.outcome(kind, "hold")
	return r
}

// existing reports whether evt itself is stored, and, for replaceable and
// addressable kinds, whether a version that wins over evt is stored
// (later created_at, or the same created_at and a lower id).
func (s *Server) existing(ctx context.Context, evt *nostr.Event, replace bool) (have, newer bool, err error) {
	ch, err := s.store.QueryEvents(ctx, nostr.Filter{IDs: []string{evt.ID}, Limit: 1})
	if err != nil {
		return false, false, fmt.Errorf("query by id: %w", err)
	}
	for range ch {
		have = true
	}
	if have || !replace {
		return have, false, nil
	}
	f := nostr.Filter{Kinds: []int{evt.Kind}, Authors: []string{evt.PubKey}, Limit: 10}
	if nostr.IsAddressableKind(evt.Kind) {
		f.Tags = nostr.TagMap{"d": []string{evt.Tags.GetD()}}
	}
	ch, err = s.store.QueryEvents(ctx, f)
	if err != nil {
		return false, false, fmt.Errorf("query previous versions: %w", err)
	}
	for prev := range ch {
		if nip34.LaterEvent(prev, evt) {
			newer = true
		}
	}
	return false, newer, nil
}

// deleteEvent removes one stored event (NIP-09 request or replacement).
func (s *Server) deleteEvent(ctx context.Context, evt *nostr.Event) error {
	if !s.writes.begin() {
		return outcome.Err(resClosing)
	}
	defer s.writes.end()
	if err := s.store.DeleteEvent(ctx, evt); err != nil {
		s.log.Error("deleting event failed", "id", evt.ID, "error", err)
		return outcome.Err(outcome.New(outcome.Error, "could not delete the event"))
	}
	s.metrics.deleted.Inc()
	return nil
}

// Query answers the gate's REQs and NEG-OPENs from the store, which applies
// the query limits.
func (s *Server) Query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	return s.store.QueryEvents(ctx, f)
}

// NegentropyStorage answers a NEG-OPEN from the store's negentropy index
// when it keeps one (gate.NegentropyStorer); ok false sends the gate to
// Query.
func (s *Server) NegentropyStorage(ctx context.Context, f nostr.Filter, max int) (negentropy.Storage, bool, error) {
	ns, ok := s.store.(gate.NegentropyStorer)
	if !ok {
		return nil, false, nil
	}
	return ns.NegentropyStorage(ctx, f, max)
}

// Count answers the gate's COUNTs (NIP-45).
func (s *Server) Count(ctx context.Context, f nostr.Filter) (int64, error) {
	c, ok := s.store.(eventstore.Counter)
	if !ok {
		return 0, errors.New("unsupported: this relay does not count events (NIP-45)")
	}
	return c.CountEvents(ctx, f)
}
