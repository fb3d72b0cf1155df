package hosting

import (
	"context"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// op is one operation: a stored or held event, a push, a hunt arrival, a
// sweep or re-check. It carries the views it has built, so each repository
// identifier is read once per operation, and is passed down to every step.
type op struct {
	*Hosting
	ctx   context.Context
	views map[string]*view
}

func (h *Hosting) begin(ctx context.Context) *op {
	return &op{Hosting: h, ctx: ctx, views: map[string]*view{}}
}

// view returns the operation's view of identifier d, building it once.
func (o *op) view(d string) *view {
	if v, ok := o.views[d]; ok {
		return v
	}
	v := &view{d: d, rv: o.roster.View(o.ctx, d, ""), byRoster: map[string]stateSet{}}
	o.views[d] = v
	return v
}

// view is what is known here about the repositories with one identifier:
// announcements read by author and each owner's v3 roster (core/roster, the
// one place the maintainer rule is applied), and the states of each
// owner's maintainers (read on first use, by author).
type view struct {
	d         string
	rv        *roster.View
	byRoster  map[string]stateSet // by roster (the members, joined)
	published []*nostr.Event      // states this operation published
}

type stateSet struct{ stored, held []*nostr.Event }

// maintainers is the authorised maintainer set of owner's repository.
func (v *view) maintainers(owner string) map[string]bool {
	return v.rv.Roster(owner).Maintainers
}

// owners lists the owners (hex) of announcements of this identifier for
// which a state by author is authoritative: every owner whose roster
// contains author, found by walking authors from author.
func (v *view) owners(author string) []string {
	var out []string
	for _, e := range v.rv.Owners(author, nil) {
		out = append(out, e.Pubkey)
	}
	return out
}

// clones lists the clone URLs of the announcements of owner's confirmed
// maintainers only (maintainers-v3.md §6.8: an invitee's URLs are not
// trusted, or invitees could point the hunter anywhere).
func (v *view) clones(owner string) []string {
	var out []string
	for _, e := range v.rv.Trusted(owner) {
		out = append(out, e.Clone...)
	}
	return out
}

func (v *view) load(owner string) stateSet {
	// The states read depend on the roster only: owners of one
	// identifier whose rosters agree (reciprocal maintainers) share a read.
	k := strings.Join(v.rv.Roster(owner).Members(), ",")
	s, ok := v.byRoster[k]
	if !ok {
		s.stored, s.held = v.rv.States(owner)
		v.byRoster[k] = s
	}
	return s
}

// states are the states authoritative for owner's repository, from the
// store and from purgatory, so a re-published state can heal a repo whose
// data was lost (grasp.md §10 item 6). Push authorisation takes the Later
// one (githttp.Authorize).
func (v *view) states(owner string) []githttp.StateCandidate {
	maint := v.maintainers(owner)
	s := v.load(owner)
	var out []githttp.StateCandidate
	for _, evs := range [][]*nostr.Event{s.stored, v.published, s.held} {
		for _, evt := range evs {
			if !maint[evt.PubKey] {
				continue
			}
			if c, ok := candidate(evt); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// latest is the authoritative stored state of owner's repository
// (nip34.LatestState: current roster, then Later).
func (v *view) latest(owner string) (githttp.StateCandidate, bool) {
	s := v.load(owner)
	var parsed []nip34.State
	byID := map[string]*nostr.Event{}
	for _, evs := range [][]*nostr.Event{s.stored, v.published} {
		for _, evt := range evs {
			if st, err := nip34.ParseState(evt); err == nil {
				parsed = append(parsed, st)
				byID[evt.ID] = evt
			}
		}
	}
	best, ok := nip34.LatestState(parsed, v.maintainers(owner))
	if !ok {
		return githttp.StateCandidate{}, false
	}
	return candidate(byID[best.EventID])
}

// stored records a state the operation has just published, so the steps
// after it see the store as it now is.
func (v *view) stored(evt *nostr.Event) {
	v.published = append(v.published, evt)
}

// candidate adapts a state event to push authorisation's form.
func candidate(evt *nostr.Event) (githttp.StateCandidate, bool) {
	st, err := nip34.ParseState(evt)
	if err != nil {
		return githttp.StateCandidate{}, false
	}
	refs, head := stateRefs(st)
	return githttp.StateCandidate{EventID: evt.ID, Author: evt.PubKey, CreatedAt: int64(evt.CreatedAt), Refs: refs, HEAD: head}, true
}
