package relay

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
)

// The cheap limits of an event (sizes, tags, created_at), checked before
// the pipeline (rejectEvent). Filter and subscription limits
// are the gate's.

// checkEvent applies the cheap limits; it returns why the event is invalid
// ("" when it is not).
func (s *Server) checkEvent(evt *nostr.Event) string {
	l := s.limits
	// Stores encode kind as uint16 and created_at as uint32: anything outside
	// would be silently wrapped into another kind or time.
	if evt.Kind < 0 || evt.Kind > 65535 {
		return "kind must be between 0 and 65535"
	}
	if evt.CreatedAt < 0 || evt.CreatedAt > math.MaxUint32 {
		return "created_at is out of range"
	}
	if len(evt.Tags) > l.MaxEventTags {
		return fmt.Sprintf("too many tags (%d > %d)", len(evt.Tags), l.MaxEventTags)
	}
	if len(evt.Content) > l.MaxContentBytes {
		return fmt.Sprintf("content too large (%d > %d bytes)", len(evt.Content), l.MaxContentBytes)
	}
	// An event signed over invalid UTF-8 would be served with U+FFFD in
	// its place (JSON encoding replaces it), no longer matching its id and
	// signature, so strict clients and GRASP-02 peers would reject what we
	// serve (audit F15).
	if !utf8.ValidString(evt.Content) {
		return "content is not valid UTF-8"
	}
	for _, tag := range evt.Tags {
		for _, v := range tag {
			if len(v) > l.MaxTagValueBytes {
				return fmt.Sprintf("tag value too large (%d > %d bytes)", len(v), l.MaxTagValueBytes)
			}
			if !utf8.ValidString(v) {
				return "a tag is not valid UTF-8"
			}
		}
	}
	// The size is that of the event's JSON. Serialising every event to
	// measure it cost ~10 us and its size in garbage (issue 27 part 5):
	// one whose bound is within the limit is within it; only one near the
	// limit is serialised.
	if jsonSizeBound(evt) > l.MaxEventBytes {
		if b, err := evt.MarshalJSON(); err != nil {
			return "event cannot be serialised"
		} else if len(b) > l.MaxEventBytes {
			return fmt.Sprintf("event too large (%d > %d bytes)", len(b), l.MaxEventBytes)
		}
	}
	now := s.clock.Now()
	created := evt.CreatedAt.Time()
	if upper := l.CreatedAtUpperLimit.D(); created.After(now.Add(upper)) {
		return "created_at is too far in the future"
	}
	if lower := l.CreatedAtLowerLimit.D(); lower > 0 && created.Before(now.Add(-lower)) {
		return "created_at is too far in the past"
	}
	return ""
}

// resEphemeral refuses an ephemeral event, on every instance alike.
var resEphemeral = outcome.New(outcome.Blocked, "ephemeral events are not relayed here")

// rejectEvent counts every event that reaches the write path from a client
// or a sync peer and refuses the ones over the cheap limits.
func (s *Server) rejectEvent(evt *nostr.Event, meta policy.Meta) (outcome.Result, bool) {
	s.metrics.received.WithLabelValues(kindLabel(evt.Kind), string(meta.Source)).Inc()
	if nostr.IsEphemeralKind(evt.Kind) {
		// A git relay has no use for ephemeral events, and one instance
		// of several cannot deliver them to the subscribers of the others.
		return s.refuse(evt, resEphemeral), true
	}
	if msg := s.checkEvent(evt); msg != "" {
		return s.refuse(evt, outcome.New(outcome.Invalid, msg)), true
	}
	return outcome.Result{}, false
}

// jsonSizeBound is at least the length of evt.MarshalJSON(), without
// serialising: the fixed keys and punctuation (under 100 bytes), two
// numbers of at most 20 digits, and every string at most six bytes per
// byte (the longest escape, \u00XX, stands for one byte, as \ufffd does
// for a byte of invalid UTF-8 and \u2028 for three), two quotes and a
// comma each, and a tag's brackets and comma.
func jsonSizeBound(evt *nostr.Event) int {
	n := 100 + 2*20
	str := func(s string) { n += 6*len(s) + 3 }
	str(evt.ID)
	str(evt.PubKey)
	str(evt.Sig)
	str(evt.Content)
	for _, tag := range evt.Tags {
		n += 3
		for _, v := range tag {
			str(v)
		}
	}
	return n
}
