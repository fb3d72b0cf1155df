package relay

import (
	"context"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
)

// The cheap limits of an event (sizes, tags, created_at), checked before
// the pipeline as khatru's RejectEvent hook. Filter and subscription limits
// are the gate's.

// checkEvent applies the cheap limits; it returns a NIP-01 prefixed reason.
func (s *Server) checkEvent(evt *nostr.Event) string {
	l := s.limits
	// Stores encode kind as uint16 and created_at as uint32: anything outside
	// would be silently wrapped into another kind or time.
	if evt.Kind < 0 || evt.Kind > 65535 {
		return "invalid: kind must be between 0 and 65535"
	}
	if evt.CreatedAt < 0 || evt.CreatedAt > math.MaxUint32 {
		return "invalid: created_at is out of range"
	}
	if len(evt.Tags) > l.MaxEventTags {
		return fmt.Sprintf("invalid: too many tags (%d > %d)", len(evt.Tags), l.MaxEventTags)
	}
	if len(evt.Content) > l.MaxContentBytes {
		return fmt.Sprintf("invalid: content too large (%d > %d bytes)", len(evt.Content), l.MaxContentBytes)
	}
	// An event signed over invalid UTF-8 would be served with U+FFFD in
	// its place (JSON encoding replaces it), no longer matching its id and
	// signature, so strict clients and GRASP-02 peers would reject what we
	// serve (audit F15).
	if !utf8.ValidString(evt.Content) {
		return "invalid: content is not valid UTF-8"
	}
	for _, tag := range evt.Tags {
		for _, v := range tag {
			if len(v) > l.MaxTagValueBytes {
				return fmt.Sprintf("invalid: tag value too large (%d > %d bytes)", len(v), l.MaxTagValueBytes)
			}
			if !utf8.ValidString(v) {
				return "invalid: a tag is not valid UTF-8"
			}
		}
	}
	if b, err := evt.MarshalJSON(); err != nil {
		return "invalid: event cannot be serialised"
	} else if len(b) > l.MaxEventBytes {
		return fmt.Sprintf("invalid: event too large (%d > %d bytes)", len(b), l.MaxEventBytes)
	}
	now := s.clock.Now()
	created := evt.CreatedAt.Time()
	if upper := l.CreatedAtUpperLimit.D(); created.After(now.Add(upper)) {
		return "invalid: created_at is too far in the future"
	}
	if lower := l.CreatedAtLowerLimit.D(); lower > 0 && created.Before(now.Add(-lower)) {
		return "invalid: created_at is too far in the past"
	}
	return ""
}

// msgEphemeral refuses an ephemeral event, on every instance alike.
const msgEphemeral = "blocked: ephemeral events are not relayed here"

// rejectEvent is khatru's RejectEvent hook. It counts every event that
// reaches us and refuses the ones over the cheap limits.
func (s *Server) rejectEvent(ctx context.Context, evt *nostr.Event) (bool, string) {
	c := callOf(ctx)
	if c.publish {
		return false, ""
	}
	s.metrics.received.WithLabelValues(kindLabel(evt.Kind), string(c.meta.Source)).Inc()
	if nostr.IsEphemeralKind(evt.Kind) {
		// Ephemeral events would go through khatru's own broadcast, which
		// races with subscription changes; a git relay has no use for them.
		return s.refused(evt, msgEphemeral)
	}
	if msg := s.checkEvent(evt); msg != "" {
		return s.refused(evt, msg)
	}
	return false, ""
}

func (s *Server) refused(evt *nostr.Event, msg string) (bool, string) {
	s.metrics.rejected.WithLabelValues(kindLabel(evt.Kind), reasonClass(msg)).Inc()
	return true, msg
}
