package relay

import (
	"context"
	"errors"
	"fmt"
	"github.com/grasp-dev/grasp/core/nip34"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
)

// Limits are the cheap checks applied before the pipeline, and the NIP-11
// limitation block that advertises them. A zero field takes its value from
// DefaultLimits; a negative field switches that check off.
type Limits struct {
	MaxEventBytes    int           // serialised event JSON
	MaxContentBytes  int           // content field
	MaxTags          int           // number of tags
	MaxTagValueBytes int           // any single tag element
	CreatedAtLower   time.Duration // how far in the past created_at may be
	CreatedAtUpper   time.Duration // how far in the future created_at may be
	MaxFilters       int           // filters per REQ
	MaxFilterItems   int           // ids, authors, kinds or values of one tag in a filter
	MaxTagFilters    int           // distinct #x keys in a filter
	MaxSubscriptions int           // advertised; enforced by the websocket front
	MaxSubIDLength   int
	MaxLimit         int // REQ limit is clamped to this
	DefaultLimit     int // REQ limit when the filter has none
	MaxMessageBytes  int // websocket frame
}

// DefaultLimits are chosen for NIP-34 traffic: patches and PGP-signed commit
// tags are larger than social notes (strfry's 64 KiB / 1 KiB would cut real
// patches and commit-pgp-sig tags), and repository events stay valid for
// years, so there is no lower created_at bound (synced history is old).
func DefaultLimits() Limits {
	return Limits{
		MaxEventBytes:    512 << 10,
		MaxContentBytes:  480 << 10,
		MaxTags:          2000,
		MaxTagValueBytes: 8 << 10,
		CreatedAtLower:   -1,
		CreatedAtUpper:   15 * time.Minute,
		MaxFilters:       200,
		MaxFilterItems:   1000,
		MaxTagFilters:    4,
		MaxSubscriptions: 200,
		MaxSubIDLength:   64,
		MaxLimit:         500,
		DefaultLimit:     100,
		MaxMessageBytes:  1 << 20,
	}
}

func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	pickInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	pickDur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	pickInt(&l.MaxEventBytes, d.MaxEventBytes)
	pickInt(&l.MaxContentBytes, d.MaxContentBytes)
	pickInt(&l.MaxTags, d.MaxTags)
	pickInt(&l.MaxTagValueBytes, d.MaxTagValueBytes)
	pickDur(&l.CreatedAtLower, d.CreatedAtLower)
	pickDur(&l.CreatedAtUpper, d.CreatedAtUpper)
	pickInt(&l.MaxFilters, d.MaxFilters)
	pickInt(&l.MaxFilterItems, d.MaxFilterItems)
	pickInt(&l.MaxTagFilters, d.MaxTagFilters)
	pickInt(&l.MaxSubscriptions, d.MaxSubscriptions)
	pickInt(&l.MaxSubIDLength, d.MaxSubIDLength)
	pickInt(&l.MaxLimit, d.MaxLimit)
	pickInt(&l.DefaultLimit, d.DefaultLimit)
	pickInt(&l.MaxMessageBytes, d.MaxMessageBytes)
	// Queries always need a bound: stores fall back to their own (smaller) caps.
	if l.MaxLimit < 0 || l.DefaultLimit < 0 {
		return l, errors.New("MaxLimit and DefaultLimit cannot be switched off")
	}
	if l.DefaultLimit > l.MaxLimit {
		return l, fmt.Errorf("DefaultLimit %d exceeds MaxLimit %d", l.DefaultLimit, l.MaxLimit)
	}
	if l.MaxMessageBytes < 0 {
		return l, errors.New("MaxMessageBytes cannot be switched off")
	}
	return l, nil
}

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
	if l.MaxTags > 0 && len(evt.Tags) > l.MaxTags {
		return fmt.Sprintf("invalid: too many tags (%d > %d)", len(evt.Tags), l.MaxTags)
	}
	if l.MaxContentBytes > 0 && len(evt.Content) > l.MaxContentBytes {
		return fmt.Sprintf("invalid: content too large (%d > %d bytes)", len(evt.Content), l.MaxContentBytes)
	}
	if l.MaxTagValueBytes > 0 {
		for _, tag := range evt.Tags {
			for _, v := range tag {
				if len(v) > l.MaxTagValueBytes {
					return fmt.Sprintf("invalid: tag value too large (%d > %d bytes)", len(v), l.MaxTagValueBytes)
				}
			}
		}
	}
	if l.MaxEventBytes > 0 {
		if b, err := evt.MarshalJSON(); err != nil {
			return "invalid: event cannot be serialised"
		} else if len(b) > l.MaxEventBytes {
			return fmt.Sprintf("invalid: event too large (%d > %d bytes)", len(b), l.MaxEventBytes)
		}
	}
	now := s.clock.Now()
	created := evt.CreatedAt.Time()
	if l.CreatedAtUpper > 0 && created.After(now.Add(l.CreatedAtUpper)) {
		return "invalid: created_at is too far in the future"
	}
	if l.CreatedAtLower > 0 && created.Before(now.Add(-l.CreatedAtLower)) {
		return "invalid: created_at is too far in the past"
	}
	return ""
}

// rejectEvent is khatru's RejectEvent hook. It counts every event that
// reaches us and refuses the ones over the cheap limits.
func (s *Server) rejectEvent(ctx context.Context, evt *nostr.Event) (bool, string) {
	if modeOf(ctx) == modePublish {
		return false, ""
	}
	s.metrics.received.WithLabelValues(kindLabel(evt.Kind), string(metaFor(ctx, s.clock).Source)).Inc()
	if nostr.IsEphemeralKind(evt.Kind) {
		// Ephemeral events would go through khatru's own broadcast, which
		// races with subscription changes; a git relay has no use for them.
		return s.refused(evt, "blocked: ephemeral events are not relayed here")
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

// checkFilter refuses filters that are malformed or too expensive.
func (s *Server) checkFilter(f nostr.Filter) string {
	l := s.limits
	if f.Search != "" {
		return "blocked: search (NIP-50) is not supported"
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return "invalid: since is after until"
	}
	if l.MaxFilterItems > 0 && (len(f.IDs) > l.MaxFilterItems || len(f.Authors) > l.MaxFilterItems || len(f.Kinds) > l.MaxFilterItems) {
		return fmt.Sprintf("blocked: too many ids, authors or kinds in a filter (max %d)", l.MaxFilterItems)
	}
	for _, id := range f.IDs {
		if !nip34.IsHex64(id) {
			return "invalid: ids must be 64-character lowercase hex"
		}
	}
	for _, pk := range f.Authors {
		if !nip34.IsHex64(pk) {
			return "invalid: authors must be 64-character lowercase hex"
		}
	}
	for _, k := range f.Kinds {
		if k < 0 || k > 65535 {
			return "invalid: kinds must be between 0 and 65535"
		}
	}
	if l.MaxTagFilters > 0 && len(f.Tags) > l.MaxTagFilters {
		return fmt.Sprintf("blocked: too many tag filters (max %d)", l.MaxTagFilters)
	}
	for key, values := range f.Tags {
		if len(key) != 1 {
			return "invalid: only single-letter tag filters are supported"
		}
		if l.MaxFilterItems > 0 && len(values) > l.MaxFilterItems {
			return fmt.Sprintf("blocked: too many values for #%s (max %d)", key, l.MaxFilterItems)
		}
	}
	return ""
}

// overwriteFilter clamps the limit, counts the filters of each REQ and
// registers limit:0 subscriptions (which khatru never shows to RejectFilter).
func (s *Server) overwriteFilter(ctx context.Context, f *nostr.Filter) {
	n := s.reqs.add(ctx)
	if !f.LimitZero {
		if f.Limit <= 0 {
			f.Limit = s.limits.DefaultLimit
		} else if f.Limit > s.limits.MaxLimit {
			f.Limit = s.limits.MaxLimit
		}
	}
	if f.LimitZero && (s.checkSub(ctx, n) != "" || s.checkFilter(*f) != "") {
		// Make khatru run RejectFilter, which answers CLOSED with the reason.
		f.LimitZero = false
		f.Limit = 1
		return
	}
	if f.LimitZero {
		s.subscribe(ctx, *f)
	}
}

// rejectFilter is khatru's RejectFilter hook for REQ filters.
func (s *Server) rejectFilter(ctx context.Context, f nostr.Filter) (bool, string) {
	if msg := s.checkSub(ctx, s.reqs.count(ctx)); msg != "" {
		return true, msg
	}
	if msg := s.checkFilter(f); msg != "" {
		return true, msg
	}
	s.subscribe(ctx, f)
	return false, ""
}

func (s *Server) checkSub(ctx context.Context, filters int) string {
	id, ok := subscriptionID(ctx)
	if !ok {
		return ""
	}
	if id == "" {
		return "invalid: subscription id must not be empty"
	}
	if !utf8.ValidString(id) {
		return "invalid: subscription id must be valid UTF-8"
	}
	if s.limits.MaxSubIDLength > 0 && len(id) > s.limits.MaxSubIDLength {
		return "invalid: subscription id longer than " + strconv.Itoa(s.limits.MaxSubIDLength)
	}
	if s.limits.MaxFilters > 0 && filters > s.limits.MaxFilters {
		return fmt.Sprintf("blocked: too many filters in one REQ (max %d)", s.limits.MaxFilters)
	}
	return ""
}

// subscriptionID reads the REQ's subscription id; khatru's accessor panics on
// contexts that are not a REQ's (NEG-OPEN, COUNT, internal calls).
func subscriptionID(ctx context.Context) (id string, ok bool) {
	defer func() {
		if recover() != nil {
			id, ok = "", false
		}
	}()
	return khatru.GetSubscriptionID(ctx), true
}

// reqCounter counts the filters seen per REQ. khatru hands every filter of
// one REQ the same context, so the context identifies the REQ; the entry is
// dropped when that REQ's context ends (CLOSE, replacement, disconnect).
type reqCounter struct {
	mu sync.Mutex
	n  map[context.Context]int
}

func newReqCounter() *reqCounter { return &reqCounter{n: make(map[context.Context]int)} }

func (r *reqCounter) add(ctx context.Context) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, seen := r.n[ctx]
	if !seen {
		context.AfterFunc(ctx, func() {
			r.mu.Lock()
			delete(r.n, ctx)
			r.mu.Unlock()
		})
	}
	n++
	r.n[ctx] = n
	return n
}

func (r *reqCounter) count(ctx context.Context) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[ctx]
}
