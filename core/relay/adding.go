package relay

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip70"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/gate"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

const (
	msgDuplicate = "duplicate: already have this event"
	msgNewer     = "duplicate: have a newer version of this event"
	msgClosing   = "error: relay is shutting down, try again later"
	msgSaveFail  = "error: could not save the event"
)

type callKey struct{}

// call travels in the context through khatru's AddEvent to the write hook:
// where the event came from, and what the client's OK says. It is how the
// message of an OK true (purgatory, duplicate, shadow) gets from the
// decision to the caller of Ingest, the only way it travels.
type call struct {
	publish bool // Publish: stored without the pipeline
	meta    policy.Meta
	msg     string
}

func callOf(ctx context.Context) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c
	}
	return &call{meta: policy.Meta{Source: policy.SourceClient}}
}

// Ingest takes an event from a client (the gate, meta.Source "client") or a
// sync peer (meta.Source "sync" when unset): it checks the id and the
// signature, then runs khatru's write pipeline with the acceptance pipeline
// inside. ok and msg are what the OK carries.
func (s *Server) Ingest(ctx context.Context, evt *nostr.Event, meta policy.Meta) (ok bool, msg string) {
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
			ok, msg = false, "error: internal error while processing this event; it was logged, try again later"
		}
	}()
	if !evt.CheckID() {
		s.metrics.rejected.WithLabelValues(kindLabel(evt.Kind), "invalid").Inc()
		return false, "invalid: id is computed incorrectly"
	}
	if valid, err := evt.CheckSignature(); err != nil || !valid {
		s.metrics.rejected.WithLabelValues(kindLabel(evt.Kind), "invalid").Inc()
		return false, "invalid: signature is invalid"
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
				return false, "auth-required: this event may only be published by its author"
			}
			return false, "auth-required: this event may only be published by its author; this connection is authenticated as another key"
		}
		if nip70.HasEmbeddedProtected(*evt) {
			return false, "blocked: a protected event cannot be reposted"
		}
	}
	c := &call{meta: meta}
	if _, err := s.khatru.AddEvent(context.WithValue(ctx, callKey{}, c), evt); err != nil {
		return false, err.Error()
	}
	return true, c.msg
}

// Publish stores evt and broadcasts it without asking the pipeline: it is how
// purgatory releases an event whose git data arrived. Deletion rules and
// replaceable/addressable semantics still apply; Effects.Apply is not
// called (the release is the effect). It returns nil when the event is
// stored or already was, and an error with a NIP-01 prefixed reason when the
// store refused it (e.g. deleted meanwhile, or a newer version exists).
func (s *Server) Publish(ctx context.Context, evt *nostr.Event) error {
	c := &call{publish: true, meta: policy.Meta{Source: policy.SourcePurgatory, ReceivedAt: s.clock.Now()}}
	if nostr.IsEphemeralKind(evt.Kind) {
		// Refused as Ingest refuses it (limits.go): no instance relays an
		// ephemeral event, so none is delivered by one instance only.
		return fmt.Errorf("publish %s: %s", evt.ID, msgEphemeral)
	}
	if _, err := s.khatru.AddEvent(context.WithValue(ctx, callKey{}, c), evt); err != nil {
		return fmt.Errorf("publish %s: %w", evt.ID, err)
	}
	return nil
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

// write is the StoreEvent / ReplaceEvent hook: the one place where the
// pipeline decides, and where the decision is carried out with the event.
// Every OK true is answered with ErrDupEvent, after which khatru does
// nothing more (see the package doc); the gate broadcasts what was stored.
func (s *Server) write(ctx context.Context, evt *nostr.Event, replace bool) error {
	if !s.writes.begin() {
		return errors.New(msgClosing)
	}
	defer s.writes.end()
	c := callOf(ctx)
	kind := kindLabel(evt.Kind)

	have, newer, err := s.existing(ctx, evt, replace)
	if err != nil {
		s.log.Error("duplicate check failed", "id", evt.ID, "error", err)
		return errors.New(msgSaveFail)
	}
	if have {
		c.msg = msgDuplicate
		s.metrics.outcome(kind, "duplicate")
		return eventstore.ErrDupEvent
	}
	if newer {
		s.metrics.rejected.WithLabelValues(kind, "duplicate").Inc()
		return errors.New(msgNewer)
	}
	if gone, err := s.deletedByAuthor(ctx, evt); err != nil {
		s.log.Error("deletion check failed", "id", evt.ID, "error", err)
		return errors.New(msgSaveFail)
	} else if gone {
		s.metrics.rejected.WithLabelValues(kind, "blocked").Inc()
		return errors.New(msgDeleted)
	}

	d := policy.Decision{Outcome: policy.Store}
	if !c.publish {
		d = s.pipeline.Decide(ctx, evt, c.meta)
	}
	if d.Outcome == policy.Rejected {
		if len(d.Effects) > 0 && s.effects != nil {
			s.effects.Apply(ctx, evt, d)
		}
		msg := d.Msg
		if msg == "" {
			msg = "blocked: rejected by policy"
		}
		msg = nostr.NormalizeOKMessage(msg, "blocked")
		s.metrics.rejected.WithLabelValues(kind, reasonClass(msg)).Inc()
		return errors.New(msg)
	}
	if (d.Outcome == policy.Store || d.Outcome == policy.Hold) && s.opts.Record != nil {
		// GRASP-08: privacy is decided once, before the event is durable
		// (and, for a deletion, before its targets are gone).
		if err := s.opts.Record(ctx, evt); err != nil {
			msg := nostr.NormalizeOKMessage(err.Error(), "error")
			s.metrics.rejected.WithLabelValues(kind, reasonClass(msg)).Inc()
			return errors.New(msg)
		}
	}
	if evt.Kind == 5 {
		// The author's own deletion is honoured also when the request is
		// shadowed or held: it harms no one else, and refusing it would
		// reveal a shadow rejection.
		if msg := s.deleteTargets(ctx, evt); msg != "" {
			s.metrics.rejected.WithLabelValues(kind, reasonClass(msg)).Inc()
			return errors.New(msg)
		}
		s.deletions.add(evt)
	}
	switch d.Outcome {
	case policy.Store:
	case policy.Shadow:
		c.msg = d.Msg
		s.metrics.outcome(kind, "shadow")
		return eventstore.ErrDupEvent
	case policy.Hold:
		return s.hold(ctx, c, evt, d)
	default:
		s.log.Error("pipeline returned an unknown outcome", "outcome", int(d.Outcome), "id", evt.ID)
		return errors.New("error: could not decide about this event")
	}

	if replace {
		err = s.store.ReplaceEvent(ctx, evt)
	} else {
		err = s.store.SaveEvent(ctx, evt)
	}
	if errors.Is(err, eventstore.ErrDupEvent) {
		c.msg = msgDuplicate
		s.metrics.outcome(kind, "duplicate")
		return eventstore.ErrDupEvent
	}
	if err != nil {
		s.log.Error("saving event failed", "id", evt.ID, "kind", evt.Kind, "error", err)
		return errors.New(msgSaveFail)
	}
	s.metrics.stored.WithLabelValues(kind).Inc()
	// The callbacks first: GRASP-08's visibility learns of a private
	// announcement before the broadcast asks who may receive it.
	for _, fn := range s.storedCallbacks() {
		fn(ctx, evt)
	}
	s.gate.Broadcast(evt)
	if !c.publish && s.effects != nil {
		s.effects.Apply(ctx, evt, d)
	}
	return eventstore.ErrDupEvent
}

func (s *Server) hold(ctx context.Context, c *call, evt *nostr.Event, d policy.Decision) error {
	kind := kindLabel(evt.Kind)
	if s.effects == nil {
		s.log.Error("pipeline asked to hold an event but no purgatory is configured", "id", evt.ID)
		s.metrics.rejected.WithLabelValues(kind, "error").Inc()
		return errors.New("error: purgatory is not available")
	}
	msg, err := s.effects.Hold(ctx, evt, d, c.meta)
	var refused *policy.Refusal
	if errors.As(err, &refused) {
		msg := nostr.NormalizeOKMessage(refused.Msg, "error")
		s.metrics.rejected.WithLabelValues(kind, reasonClass(msg)).Inc()
		return errors.New(msg)
	}
	if err != nil {
		s.log.Error("holding event in purgatory failed", "id", evt.ID, "error", err)
		s.metrics.rejected.WithLabelValues(kind, "error").Inc()
		return errors.New("error: could not keep the event in purgatory")
	}
	if !strings.HasPrefix(msg, "purgatory:") && !strings.HasPrefix(msg, "duplicate:") {
		msg = policy.MsgPurgatory
	}
	c.msg = msg
	s.metrics.outcome(kind, "hold")
	return eventstore.ErrDupEvent
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
		return errors.New(msgClosing)
	}
	defer s.writes.end()
	if err := s.store.DeleteEvent(ctx, evt); err != nil {
		s.log.Error("deleting event failed", "id", evt.ID, "error", err)
		return errors.New("error: could not delete the event")
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
func (s *Server) NegentropyStorage(f nostr.Filter, max int) (negentropy.Storage, bool, error) {
	ns, ok := s.store.(gate.NegentropyStorer)
	if !ok {
		return nil, false, nil
	}
	return ns.NegentropyStorage(f, max)
}

// Count answers the gate's COUNTs (NIP-45).
func (s *Server) Count(ctx context.Context, f nostr.Filter) (int64, error) {
	c, ok := s.store.(eventstore.Counter)
	if !ok {
		return 0, errors.New("unsupported: this relay does not count events (NIP-45)")
	}
	return c.CountEvents(ctx, f)
}
