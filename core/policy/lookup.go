package policy

import (
	"context"
	"fmt"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// queryCap bounds every read the rules make, so a hostile event that tags
// thousands of ids costs a bounded amount of work.
const queryCap = 500

// stored runs a store query and collects at most queryCap events.
func (r *Rules) stored(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	if f.Limit == 0 || f.Limit > queryCap {
		f.Limit = queryCap
	}
	ch, err := r.events.QueryEvents(ctx, f)
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

// repoView is everything known here about one identifier: the newest
// announcement of each author, and whether it is stored (served) or held.
type repoView struct {
	d      string
	latest map[string]nip34.Announcement // by author
	isHeld map[string]bool               // author's newest version is held
	all    []nip34.Announcement
}

// loadRepo reads the stored and held announcements for d, leaving out the
// event being decided (a release re-evaluates a held event against the
// others, not against itself).
func (r *Rules) loadRepo(ctx context.Context, d string, exclude string) (*repoView, error) {
	f := nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Tags: nostr.TagMap{"d": []string{d}}}
	st, err := r.stored(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("load announcements for %q: %w", d, err)
	}
	hd, err := r.held(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("load announcements for %q: %w", d, err)
	}
	v := &repoView{d: d, latest: map[string]nip34.Announcement{}, isHeld: map[string]bool{}}
	add := func(evs []*nostr.Event, held bool) {
		for _, e := range evs {
			if e.ID == exclude {
				continue
			}
			a, err := nip34.ParseAnnouncement(e)
			if err != nil || a.Identifier != d {
				continue
			}
			cur, ok := v.latest[a.Pubkey]
			// A stored version wins over a held one: a held replacement of a
			// stored announcement never happens (it is stored directly).
			if !ok || (held == v.isHeld[a.Pubkey] && newerAnn(a, cur)) || (!held && v.isHeld[a.Pubkey]) {
				v.latest[a.Pubkey] = a
				v.isHeld[a.Pubkey] = held
			}
		}
	}
	add(st, false)
	add(hd, true)
	for _, a := range v.latest {
		v.all = append(v.all, a)
	}
	return v, nil
}

func newerAnn(a, b nip34.Announcement) bool {
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return a.EventID < b.EventID
}

// hosted reports whether a lists this service, i.e. has a bare repo here.
func (r *Rules) hosted(a nip34.Announcement) bool { return nip34.ListsService(a, r.opts.Service) }

// hosts returns the hosted announcements (owners with a bare repo here)
// whose maintainer set contains pk.
func (r *Rules) hosts(v *repoView, pk string) []nip34.Announcement {
	var out []nip34.Announcement
	for _, a := range v.all {
		if r.hosted(a) && r.maintainers(a.Pubkey, v.d, v.all)[pk] {
			out = append(out, a)
		}
	}
	return out
}

// isHeldID reports whether an event with this id is in purgatory.
func (r *Rules) isHeldID(ctx context.Context, id string) (bool, error) {
	evs, err := r.held(ctx, nostr.Filter{IDs: []string{id}})
	return len(evs) > 0, err
}
