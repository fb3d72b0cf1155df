package policy

import (
	"context"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nocontent"
	"github.com/grasp-dev/grasp/core/roster"
)

// queryCap bounds every read the rules make, so a hostile event that tags
// thousands of ids costs a bounded amount of work.
const queryCap = 500

// stored runs a store query and collects at most queryCap events, without
// their contents (core/nocontent): every rule reads the kind, author
// and tags of what it looks up, and decoding a patch's content for each
// related event cost ~20 µs an accepted event (issue 27 part 5). What it
// returns must never be served, stored or checked against a signature.
func (r *Rules) stored(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	if f.Limit == 0 || f.Limit > queryCap {
		f.Limit = queryCap
	}
	ch, err := r.events.QueryEvents(nocontent.With(ctx), f)
	if err != nil {
		return nil, fmt.Errorf("query store: %w", err)
	}
	// Drain to the end rather than stopping at the limit: the store's
	// producer goroutine is then finished when we return (stores honour
	// Limit, so this costs nothing extra), and no reader outlives the call.
	var out []*nostr.Event
	for e := range ch {
		if len(out) < f.Limit {
			out = append(out, e)
		}
	}
	return out, ctx.Err()
}

func (r *Rules) held(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	if r.heldSrc == nil {
		return nil, nil
	}
	evs, err := r.heldSrc.QueryHeld(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("query purgatory: %w", err)
	}
	if len(evs) > queryCap {
		evs = evs[:queryCap]
	}
	return evs, nil
}

// view is the acceptance rules' reading of identifier d: announcements
// loaded by author through the roster, the one place that applies the
// maintainer rule (core/roster). exclude is an event left out (the
// announcement being decided).
func (r *Rules) view(ctx context.Context, d, exclude string) *roster.View {
	return r.roster.View(ctx, d, exclude)
}

// verdict is the archive scope's answer for a (core/archive owns it): a
// bare repo here because a lists this service (Hosted) or is archived, or
// none. v is a view of a's identifier, through which whitelisted
// maintainers are matched.
func (r *Rules) verdict(v *roster.View, a nip34.Announcement) archive.Verdict {
	return r.opts.Archive.Decide(a, loader(v))
}

// hosted reports whether a has a bare repo here.
func (r *Rules) hosted(v *roster.View, a nip34.Announcement) bool { return r.verdict(v, a).HasRepo() }

// loader reads other keys' announcements through v (nil: none).
func loader(v *roster.View) nip34.Loader {
	if v == nil {
		return nil
	}
	return func(pk string) (nip34.Announcement, bool) {
		e, ok := v.Latest(pk)
		return e.Announcement, ok
	}
}

// hosts returns the hosted announcements (owners with a bare repo here)
// whose roster contains pk, found by walking authors from pk.
func (r *Rules) hosts(v *roster.View, pk string) []roster.Entry {
	return v.Owners(pk, func(e roster.Entry) bool { return r.hosted(v, e.Announcement) })
}

// anyAnnounced reports whether some announcement with identifier d is
// accepted here. It only chooses the wording of a refusal ("no
// announcement" or "not authorized"): one row, never a decision of
// authority, so strangers filling the identifier change nothing.
func (r *Rules) anyAnnounced(ctx context.Context, d string) bool {
	f := nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Tags: nostr.TagMap{"d": []string{d}}, Limit: 1}
	st, _ := r.stored(ctx, f)
	if len(st) > 0 {
		return true
	}
	hd, _ := r.held(ctx, f)
	return len(hd) > 0
}

// isHeldID reports whether an event with this id is in purgatory.
func (r *Rules) isHeldID(ctx context.Context, id string) (bool, error) {
	evs, err := r.held(ctx, nostr.Filter{IDs: []string{id}})
	return len(evs) > 0, err
}
