package store

import (
	"context"
	"math"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// EventStore is what khatru needs: eventstore.Store plus COUNT support.
type EventStore interface {
	eventstore.Store
	eventstore.Counter
}

// events adapts the event backend: queries get deliberate limits, and with
// badger writes go through the group-commit writer. With PostgreSQL (direct)
// writes go straight to the server, whose commit is already durable and
// whose unique id index settles duplicate races.
type events struct {
	s      *Store
	be     EventStore
	direct bool
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
	if err := validateEvent(evt, !e.direct); err != nil {
		e.s.m.countWrite(kind, err)
		return err
	}
	var err error
	if e.direct {
		err = e.writeDirect(ctx, kind, evt)
		e.s.m.countWrite(kind, err)
	} else {
		// Packing runs here, on the caller's goroutine, so that the one
		// writer only writes.
		stored, rec, prefix := evt, []byte(nil), byte(0)
		if kind != opDelete {
			stored, rec, prefix = splitContent(evt, !e.s.opts.noPack)
		}
		err = e.s.w.submit(ctx, &op{kind: kind, evt: stored, content: rec, contentPrefix: prefix,
			vlog: int64(len(rec)) >= e.s.vthreshold/2 || mayUseValueLog(stored, e.s.vthreshold)})
	}
	e.s.m.saveSeconds.WithLabelValues(kind.String()).Observe(e.s.env.Clock.Since(start).Seconds())
	return err
}

func (e *events) writeDirect(ctx context.Context, kind opKind, evt *nostr.Event) error {
	if e.s.closed.Load() {
		return errClosed
	}
	var err error
	if kind != opDelete {
		// before the insert commits: its notification must find the id
		// here, or this instance would deliver its own event twice
		e.s.own.add(evt.ID)
	}
	switch kind {
	case opSave:
		err = e.be.SaveEvent(ctx, evt)
	case opReplace:
		err = e.be.ReplaceEvent(ctx, evt)
	default:
		err = e.be.DeleteEvent(ctx, evt)
	}
	if err == nil || err == eventstore.ErrDupEvent {
		return err
	}
	return outcome.Errorf(outcome.Error, "%s event in postgres: %w", kind, err)
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
	if e.direct {
		return e.s.pgQuery(ctx, f, limit)
	}
	ch, err := e.be.QueryEvents(ctx, f)
	if err != nil {
		return nil, outcome.Errorf(outcome.Error, "query events: %w", err)
	}
	ch = e.s.withContent(ctx, ch)
	if len(f.IDs) > 0 {
		// The badger backend answers an ids filter from the id index alone,
		// ignoring its authors, kinds, tags, since and until, and returns
		// every listed id whatever the limit. ids filters are small, so
		// check each result against the whole filter here.
		return matching(ctx, ch, f, limit), nil
	}
	return ch, nil
}

// withoutRepeats returns f with repeated ids, authors, kinds and tag values
// dropped; the caller's slices are never modified.
func withoutRepeats(f nostr.Filter) nostr.Filter {
	f.IDs = uniq(f.IDs)
	f.Authors = uniq(f.Authors)
	f.Kinds = uniq(f.Kinds)
	if len(f.Tags) > 0 {
		tags := make(nostr.TagMap, len(f.Tags))
		for k, vs := range f.Tags {
			tags[k] = uniq(vs)
		}
		f.Tags = tags
	}
	return f
}

func uniq[T comparable](vs []T) []T {
	if len(vs) < 2 {
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
	return out
}

// matching forwards the events of src that match f, at most limit of them.
// It always drains src, so the backend's sending goroutine can finish.
func matching(ctx context.Context, src chan *nostr.Event, f nostr.Filter, limit int) chan *nostr.Event {
	out := make(chan *nostr.Event)
	go func() {
		defer close(out)
		defer func() {
			for range src {
			}
		}()
		sent := 0
		for evt := range src {
			if sent == limit {
				return
			}
			if !f.Matches(evt) {
				continue
			}
			select {
			case out <- evt:
				sent++
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// CountEvents counts matching events (NIP-45).
func (e *events) CountEvents(ctx context.Context, f nostr.Filter) (int64, error) {
	if e.s.closed.Load() {
		return 0, errClosed
	}
	e.s.m.queries.WithLabelValues("count").Inc()
	count := e.be.CountEvents
	if e.direct {
		count = e.s.pgCount
	}
	n, err := count(ctx, f)
	if err != nil {
		return 0, outcome.Errorf(outcome.Error, "count events: %w", err)
	}
	return n, nil
}

// Limits of the backend's binary encoding. An event beyond them cannot be
// stored faithfully, so it is refused instead of truncated. Content beyond
// the codec's 16-bit length goes to a large-content record (large.go).
const (
	maxTags         = math.MaxUint16
	maxTagItems     = math.MaxUint8
	maxTagItemBytes = math.MaxUint16
)

// validateEvent refuses what a backend would corrupt or panic on: badger's
// hex-decodes ids without checking them and slices the id blindly, and its
// binary encoding has the field limits checked when binaryLimits is set.
// PostgreSQL keeps created_at in a 32-bit signed column.
func validateEvent(evt *nostr.Event, binaryLimits bool) error {
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
	maxCreatedAt := nostr.Timestamp(math.MaxUint32)
	if !binaryLimits {
		maxCreatedAt = math.MaxInt32
	}
	if evt.CreatedAt < 0 || evt.CreatedAt > maxCreatedAt {
		return outcome.Errorf(outcome.Invalid, "created_at %d outside 0..%d", evt.CreatedAt, maxCreatedAt)
	}
	if !binaryLimits {
		return nil
	}
	if len(evt.Content) > maxLargeContent {
		return outcome.Errorf(outcome.Invalid, "content of %d bytes exceeds the store's %d-byte limit", len(evt.Content), maxLargeContent)
	}
	if len(evt.Tags) > maxTags {
		return outcome.Errorf(outcome.Invalid, "%d tags exceed the store's limit of %d", len(evt.Tags), maxTags)
	}
	for i, tag := range evt.Tags {
		if len(tag) > maxTagItems {
			return outcome.Errorf(outcome.Invalid, "tag %d has %d items, the store's limit is %d", i, len(tag), maxTagItems)
		}
		for _, item := range tag {
			if len(item) > maxTagItemBytes {
				return outcome.Errorf(outcome.Invalid, "tag %d has an item of %d bytes, the store's limit is %d", i, len(item), maxTagItemBytes)
			}
		}
	}
	return nil
}
