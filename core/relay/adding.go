package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fiatjaf/eventstore"
	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/policy"
)

const (
	msgDuplicate = "duplicate: already have this event"
	msgNewer     = "duplicate: have a newer version of this event"
	msgHeld      = "purgatory: won't be served until git data arrives"
	msgClosing   = "error: relay is shutting down, try again later"
	msgSaveFail  = "error: could not save the event"
	msgDeleted   = "blocked: this event was deleted by its author"
)

type mode int

const (
	modeClient  mode = iota // a websocket EVENT
	modeIngest              // Ingest: a synced event, same rules as a client
	modePublish             // Publish: stored without the pipeline
)

type callKey struct{}

// call travels in the context of Ingest and Publish so that the store hooks
// know where the event came from and can hand back the OK message.
type call struct {
	mode mode
	meta policy.Meta
	msg  string
}

func modeOf(ctx context.Context) mode {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c.mode
	}
	return modeClient
}

func metaFor(ctx context.Context, clk clock.Clock) policy.Meta {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c.meta
	}
	return policy.Meta{
		Source:     policy.SourceClient,
		Remote:     khatru.GetIP(ctx),
		Authed:     khatru.GetAuthed(ctx),
		ReceivedAt: clk.Now(),
	}
}

// note records the message of an OK true that khatru will send empty.
func (s *Server) note(ctx context.Context, id, msg string) {
	if msg == "" {
		return
	}
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.msg = msg
		return
	}
	if s.noteOK != nil {
		s.noteOK(ctx, id, msg)
	}
}

// write is the StoreEvent / ReplaceEvent hook: the one place where the
// pipeline decides. It always answers khatru with ErrDupEvent after a
// successful save so that khatru skips its own (racy) broadcast; we
// broadcast from our registry instead.
func (s *Server) write(ctx context.Context, evt *nostr.Event, replace bool) error {
	if !s.writes.begin() {
		return errors.New(msgClosing)
	}
	defer s.writes.end()
	kind := kindLabel(evt.Kind)
	md := modeOf(ctx)
	// A deletion's decision may have been taken while khatru applied it.
	remembered, haveDecision := policy.Decision{}, false
	if evt.Kind == 5 {
		remembered, haveDecision = s.deletes.take(evt.ID)
	}

	have, newer, err := s.existing(ctx, evt, replace)
	if err != nil {
		s.log.Error("duplicate check failed", "id", evt.ID, "error", err)
		return errors.New(msgSaveFail)
	}
	if have {
		s.note(ctx, evt.ID, msgDuplicate)
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

	var d policy.Decision
	if md != modePublish {
		d = remembered
		if !haveDecision {
			d = s.pipeline.Decide(ctx, evt, metaFor(ctx, s.clock))
		}
		switch d.Outcome {
		case policy.Store:
		case policy.Rejected:
			msg := d.Msg
			if msg == "" {
				msg = "blocked: rejected by policy"
			}
			msg = nostr.NormalizeOKMessage(msg, "blocked")
			s.metrics.rejected.WithLabelValues(kind, reasonClass(msg)).Inc()
			if len(d.Effects) > 0 && s.effects != nil {
				s.effects.Apply(ctx, evt, d)
			}
			return errors.New(msg)
		case policy.Shadow:
			s.note(ctx, evt.ID, d.Msg)
			s.metrics.outcome(kind, "shadow")
			return eventstore.ErrDupEvent
		case policy.Hold:
			return s.hold(ctx, evt, d)
		default:
			s.log.Error("pipeline returned an unknown outcome", "outcome", int(d.Outcome), "id", evt.ID)
			return errors.New("error: could not decide about this event")
		}
	}

	if replace {
		err = s.store.ReplaceEvent(ctx, evt)
	} else {
		err = s.store.SaveEvent(ctx, evt)
	}
	if errors.Is(err, eventstore.ErrDupEvent) {
		s.note(ctx, evt.ID, msgDuplicate)
		s.metrics.outcome(kind, "duplicate")
		return eventstore.ErrDupEvent
	}
	if err != nil {
		s.log.Error("saving event failed", "id", evt.ID, "kind", evt.Kind, "error", err)
		return errors.New(msgSaveFail)
	}
	s.metrics.stored.WithLabelValues(kind).Inc()
	s.broadcast(evt)
	if s.effects != nil {
		s.effects.Apply(ctx, evt, d)
	}
	for _, fn := range s.storedCallbacks() {
		fn(ctx, evt)
	}
	return eventstore.ErrDupEvent
}

func (s *Server) hold(ctx context.Context, evt *nostr.Event, d policy.Decision) error {
	kind := kindLabel(evt.Kind)
	if s.effects == nil {
		s.log.Error("pipeline asked to hold an event but no purgatory is configured", "id", evt.ID)
		s.metrics.rejected.WithLabelValues(kind, "error").Inc()
		return errors.New("error: purgatory is not available")
	}
	msg, err := s.effects.Hold(ctx, evt, d, metaFor(ctx, s.clock))
	if err != nil {
		s.log.Error("holding event in purgatory failed", "id", evt.ID, "error", err)
		s.metrics.rejected.WithLabelValues(kind, "error").Inc()
		return errors.New("error: could not keep the event in purgatory")
	}
	if msg == "" {
		msg = d.Msg
	}
	if !strings.HasPrefix(msg, "purgatory:") && !strings.HasPrefix(msg, "duplicate:") {
		msg = msgHeld
	}
	s.note(ctx, evt.ID, msg)
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
		if prev.CreatedAt > evt.CreatedAt || (prev.CreatedAt == evt.CreatedAt && prev.ID < evt.ID) {
			newer = true
		}
	}
	return false, newer, nil
}

// deletedByAuthor reports whether the author has deleted evt: by id, or, for
// replaceable and addressable kinds, by address with a deletion not older
// than evt (NIP-09). khatru v0.19.1 has this check too, but it queries the tag
// as "#e" / "#a", which no store indexes, so it never matches; and it ignores
// who signed the deletion, so anyone could pre-delete someone else's event.
func (s *Server) deletedByAuthor(ctx context.Context, evt *nostr.Event) (bool, error) {
	f := nostr.Filter{Kinds: []int{5}, Authors: []string{evt.PubKey}, Tags: nostr.TagMap{"e": {evt.ID}}, Limit: 1}
	found, err := s.any(ctx, f)
	if err != nil || found || nostr.IsRegularKind(evt.Kind) {
		return found, err
	}
	addr := fmt.Sprintf("%d:%s:%s", evt.Kind, evt.PubKey, evt.Tags.GetD())
	since := evt.CreatedAt
	f = nostr.Filter{Kinds: []int{5}, Authors: []string{evt.PubKey}, Tags: nostr.TagMap{"a": {addr}}, Since: &since, Limit: 1}
	return s.any(ctx, f)
}

func (s *Server) any(ctx context.Context, f nostr.Filter) (bool, error) {
	ch, err := s.store.QueryEvents(ctx, f)
	if err != nil {
		return false, fmt.Errorf("query %v: %w", f, err)
	}
	found := false
	for range ch {
		found = true
	}
	return found, nil
}

// deleteEvent is khatru's DeleteEvent hook (NIP-09 and replacements).
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

// Publish stores evt and broadcasts it without asking the pipeline: it is how
// purgatory releases an event whose git data arrived. Deletion rules and
// replaceable/addressable semantics still apply. It returns nil when the event
// is stored or already was, and an error with a NIP-01 prefixed reason when
// the store refused it (e.g. deleted meanwhile, or a newer version exists).
func (s *Server) Publish(ctx context.Context, evt *nostr.Event) error {
	c := &call{mode: modePublish, meta: policy.Meta{Source: policy.SourcePurgatory, ReceivedAt: s.clock.Now()}}
	ctx = context.WithValue(ctx, callKey{}, c)
	if evt.Kind == 5 {
		if msg := s.applyDeletion(ctx, evt); msg != "" {
			return fmt.Errorf("publish %s: %s", evt.ID, msg)
		}
	}
	if nostr.IsEphemeralKind(evt.Kind) {
		s.broadcast(evt)
		return nil
	}
	if _, err := s.khatru.AddEvent(ctx, evt); err != nil {
		return fmt.Errorf("publish %s: %w", evt.ID, err)
	}
	return nil
}

// Ingest takes an event from outside the websocket path (a sync peer): it
// checks the id (go-nostr clients do not) and the signature, then takes the
// same path as a client EVENT. ok and msg are what an OK would carry.
func (s *Server) Ingest(ctx context.Context, evt *nostr.Event, meta policy.Meta) (ok bool, msg string) {
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
	c := &call{mode: modeIngest, meta: meta}
	ctx = context.WithValue(ctx, callKey{}, c)
	if evt.Kind == 5 {
		if reject := s.applyDeletion(ctx, evt); reject != "" {
			return false, reject
		}
	}
	if _, err := s.khatru.AddEvent(ctx, evt); err != nil {
		return false, err.Error()
	}
	return true, c.msg
}
