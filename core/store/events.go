package store

import (
	"context"
	"maps"
	"math"
	"slices"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/negindex"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// EventStore is what khatru needs: eventstore.Store plus COUNT support.
type EventStore interface {
	eventstore.Store
	eventstore.Counter
}

// events is the event store khatru is given: the shared checks, limits and
// metrics of every write and query, then the backend's own (backend.go).
type events struct {
	s *Store
}

var _ EventStore = (*events)(nil)

// Init is a no-op: Open already initialised the backend.
func (e *events) Init() error { return nil }

// Close closes the whole store (khatru itself never calls it).
func (e *events) Close() {
	if err := e.s.Close(); err != nil {
		e.s.log.Error("closing store through the event store", "error", err)
	}
}

// SaveEvent returns only after the event is fsynced. A duplicate returns
// eventstore.ErrDupEvent itself, unwrapped, because khatru compares with ==.
func (e *events) SaveEvent(ctx context.Context, evt *nostr.Event) error {
	return e.write(ctx, opSave, evt)
}

// ReplaceEvent stores a replaceable or addressable event unless a newer one
// is already stored, deleting the older versions in the same transaction.
func (e *events) ReplaceEvent(ctx context.Context, evt *nostr.Event) error {
	return e.write(ctx, opReplace, evt)
}

// DeleteEvent removes evt (matched by id); deleting a missing event is not an
// error.
func (e *events) DeleteEvent(ctx context.Context, evt *nostr.Event) error {
	return e.write(ctx, opDelete, evt)
}

func (e *events) write(ctx context.Context, kind opKind, evt *nostr.Event) error {
	start := e.s.env.Clock.Now()
	if e.s.readOnly != "" {
		err := e.s.errReadOnly()
		e.s.m.countWrite(kind, err)
		return err
	}
	err := validateEvent(evt)
	if err == nil {
		err = e.s.be.checkEvent(evt)
	}
	if err != nil {
		e.s.m.countWrite(kind, err)
		return err
	}
	err = e.s.be.write(ctx, kind, evt)
	e.s.m.saveSeconds.WithLabelValues(kind.String()).Observe(e.s.env.Clock.Since(start).Seconds())
	return err
}

// effectiveLimit is the limit a query actually runs with. The backend on its
// own gives MaxLimit/4 to a REQ without a limit or above MaxLimit; here a REQ
// gets what it asked for up to MaxLimit, DefaultLimit when it did not ask,
// and a negentropy session up to NegentropyMax. A filter naming ids can
// match at most len(ids) events, and a client naming them wants all of them
// (NDK fetches the 521 ids it reconciled in one filter without a limit):
// it gets up to len(ids), whatever DefaultLimit and MaxLimit say, and the
// gate's max_filter_items bounds len(ids) instead (issue 10 part 4). It
// returns 0 for "no events".
func (e *events) effectiveLimit(ctx context.Context, f nostr.Filter) int {
	if eventstore.IsNegentropySession(ctx) {
		// One more than the limit, so that a negentropy server can tell a
		// filter matching more events than it may reconcile (NEG-ERR
		// "blocked:") from one matching exactly as many, instead of
		// reconciling a silently truncated set.
		cap := e.s.opts.Limits.NegentropyMaxEvents + 1
		if f.Limit > 0 && f.Limit < cap {
			return f.Limit
		}
		return cap
	}
	switch {
	case f.LimitZero:
		return 0
	case len(f.IDs) > 0 && (f.Limit <= 0 || f.Limit > len(f.IDs)):
		return len(f.IDs)
	case f.Limit <= 0:
		return e.s.opts.Limits.DefaultLimit
	case f.Limit > e.s.opts.Limits.MaxLimit:
		return e.s.opts.Limits.MaxLimit
	default:
		return f.Limit
	}
}

// QueryEvents streams matching events, newest first.
func (e *events) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	if e.s.closed.Load() {
		return nil, errClosed
	}
	kind := "req"
	if eventstore.IsNegentropySession(ctx) {
		kind = "negentropy"
	}
	e.s.m.queries.WithLabelValues(kind).Inc()
	// The backend indexes tag names by their first byte and would panic in
	// its own goroutine, taking the process down, on an empty one.
	for name := range f.Tags {
		if name == "" {
			return nil, outcome.Errorf(outcome.Invalid, "empty tag name in filter")
		}
	}
	limit := e.effectiveLimit(ctx, f)
	if limit == 0 {
		ch := make(chan *nostr.Event)
		close(ch)
		return ch, nil
	}
	// The badger backend runs one index scan per listed value and returns
	// an event once per scan that found it, so repeated values would repeat
	// events.
	f = withoutRepeats(f)
	// The backend honours any limit in (0, its cap] exactly; its caps are
	// MaxLimit for REQs and NegentropyMax for negentropy sessions.
	f.Limit = limit
	f.LimitZero = false
	return e.s.be.query(ctx, f, limit)
}

// withoutRepeats returns f with repeated ids, authors, kinds and tag values
// dropped; the caller's slices are never modified. A filter without
// repeats, as the write path's lookups are, is returned as it came,
// without copies (issue 27 part 5).
func withoutRepeats(f nostr.Filter) nostr.Filter {
	f.IDs = uniq(f.IDs)
	f.Authors = uniq(f.Authors)
	f.Kinds = uniq(f.Kinds)
	var tags nostr.TagMap
	for k, vs := range f.Tags {
		if u := uniq(vs); len(u) != len(vs) {
			if tags == nil {
				tags = maps.Clone(f.Tags)
			}
			tags[k] = u
		}
	}
	if tags != nil {
		f.Tags = tags
	}
	return f
}

// uniqScan is the length up to which uniq looks for repeats by comparing
// every pair instead of building a set.
const uniqScan = 16

// uniq returns vs without repeated values, vs itself when it has none.
func uniq[T comparable](vs []T) []T {
	if len(vs) < 2 {
		return vs
	}
	if len(vs) <= uniqScan && !hasRepeat(vs) {
		return vs
	}
	seen := make(map[T]struct{}, len(vs))
	out := make([]T, 0, len(vs))
	for _, v := range vs {
		if _, dup := seen[v]; !dup {
			seen[v] = struct{}{}
			out = append(out, v)
		}
	}
	if len(out) == len(vs) {
		return vs
	}
	return out
}

// hasRepeat reports whether a value of vs occurs twice.
func hasRepeat[T comparable](vs []T) bool {
	for i := 1; i < len(vs); i++ {
		if slices.Contains(vs[:i], vs[i]) {
			return true
		}
	}
	return false
}

// CountEvents counts matching events (NIP-45).
func (e *events) CountEvents(ctx context.Context, f nostr.Filter) (int64, error) {
	if e.s.closed.Load() {
		return 0, errClosed
	}
	e.s.m.queries.WithLabelValues("count").Inc()
	n, err := e.s.be.count(ctx, f)
	if err != nil {
		return 0, outcome.Errorf(outcome.Error, "count events: %w", err)
	}
	return n, nil
}

// NegentropyStorage answers a NEG-OPEN filter with the sealed (created_at,
// id) pairs of the matching events: from badger's in-memory index, or on
// PostgreSQL from one query of the pairs alone (pg_negentropy.go). ok is
// false when the backend cannot answer (badger's index is not loaded
// within indexLoadWait, broken, or does not cover the filter); the caller
// then queries. err is ErrTooManyEvents past max. ctx bounds the work and
// names the client (clientip) whose query it is.
func (e *events) NegentropyStorage(ctx context.Context, f nostr.Filter, max int) (st negentropy.Storage, ok bool, err error) {
	if e.s.closed.Load() {
		return nil, false, errClosed
	}
	return e.s.be.negentropyStorage(ctx, f, max)
}

// ErrTooManyEvents is NegentropyStorage's answer to a filter matching more
// events than a session may reconcile.
var ErrTooManyEvents = negindex.ErrTooMany

// validateEvent refuses what no backend stores faithfully: badger
// hex-decodes ids without checking them and slices the id blindly, and
// both keep the kind in 16 bits' range. The backend's checkEvent follows.
func validateEvent(evt *nostr.Event) error {
	if evt == nil {
		return outcome.Errorf(outcome.Invalid, "no event")
	}
	if !nip34.IsHex64(evt.ID) {
		return outcome.Errorf(outcome.Invalid, "event id must be 64 lowercase hex characters")
	}
	if !nip34.IsHex64(evt.PubKey) {
		return outcome.Errorf(outcome.Invalid, "pubkey must be 64 lowercase hex characters")
	}
	if !nip34.IsHex128(evt.Sig) {
		return outcome.Errorf(outcome.Invalid, "sig must be 128 lowercase hex characters")
	}
	if evt.Kind < 0 || evt.Kind > math.MaxUint16 {
		return outcome.Errorf(outcome.Invalid, "kind %d outside 0..65535", evt.Kind)
	}
	return nil
}

// checkCreatedAt refuses a created_at outside 0..max, the range a
// backend's column or encoding holds.
func checkCreatedAt(evt *nostr.Event, max nostr.Timestamp) error {
	if evt.CreatedAt < 0 || evt.CreatedAt > max {
		return outcome.Errorf(outcome.Invalid, "created_at %d outside 0..%d", evt.CreatedAt, max)
	}
	return nil
}

// opKind is an event write (or, on badger's writer, a barrier or sweep).
type opKind uint8

const (
	opSave opKind = iota
	opReplace
	opDelete
	// opBarrier carries no write: badger's side tables commit their own
	// transaction and then wait on a barrier for the next group fsync.
	opBarrier
	// opSweep removes orphaned large-content records; it runs on badger's
	// writer so that no write is between an event's two records
	// (badger_large.go).
	opSweep
)

func (k opKind) String() string {
	switch k {
	case opSave:
		return "save"
	case opReplace:
		return "replace"
	case opDelete:
		return "delete"
	case opSweep:
		return "sweep"
	default:
		return "barrier"
	}
}

// errClosed is returned for work submitted after Close began.
var errClosed = outcome.Errorf(outcome.Error, "store is closed")
