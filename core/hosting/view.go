package hosting

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// maintainers is the maintainer rule every effect applies (GRASP-01's flat
// recursive set). It is named here only: the reciprocal v3 model replaces it
// in this one place.
var maintainers nip34.MaintainerSet = nip34.RecursiveMaintainers

// op is one operation: a stored or held event, a push, a hunt arrival, a
// sweep or re-check. It carries the views it has built, so each repository
// identifier is read from the store and purgatory once per operation, and
// is passed down to every step.
type op struct {
	*Hosting
	ctx   context.Context
	views map[string]*view
}

func (h *Hosting) begin(ctx context.Context) *op {
	return &op{Hosting: h, ctx: ctx, views: map[string]*view{}}
}

// view returns the operation's view of identifier d, loading it once.
func (o *op) view(d string) *view {
	if v, ok := o.views[d]; ok {
		return v
	}
	v := o.load(o.ctx, d)
	o.views[d] = v
	return v
}

// view is what is known here about the repositories with one identifier:
// their announcements (stored and held), every owner's authorised
// maintainer set, and the states (read on first use).
type view struct {
	d     string
	anns  []nip34.Announcement
	maint map[string]map[string]bool // by owner

	load         func() // reads the states, once
	storedStates []*nostr.Event
	heldStates   []*nostr.Event
}

// load builds the view of identifier d. It is the one place where
// announcements are loaded (today: every stored and held announcement with
// this identifier; the author walk from the owner lands here) and where the
// maintainer rule is applied (maintainers).
func (h *Hosting) load(ctx context.Context, d string) *view {
	v := &view{d: d, maint: map[string]map[string]bool{}}
	for _, evt := range h.query(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Tags: nostr.TagMap{"d": {d}}}) {
		if a, err := nip34.ParseAnnouncement(evt); err == nil {
			v.anns = append(v.anns, a)
		}
	}
	for _, evt := range h.purg.Announcements(d) {
		if a, err := nip34.ParseAnnouncement(evt); err == nil {
			v.anns = append(v.anns, a)
		}
	}
	loaded := false
	v.load = func() {
		if loaded {
			return
		}
		loaded = true
		v.storedStates = h.query(ctx, nostr.Filter{Kinds: []int{nip34.KindState}, Tags: nostr.TagMap{"d": {d}}})
		v.heldStates = h.purg.States(d)
	}
	return v
}

// maintainers is the authorised maintainer set of owner's repository.
func (v *view) maintainers(owner string) map[string]bool {
	m, ok := v.maint[owner]
	if !ok {
		m = maintainers(owner, v.d, v.anns)
		v.maint[owner] = m
	}
	return m
}

// owners lists the owners (hex) of announcements of this identifier for
// which a state by author is authoritative: every owner whose maintainer
// set contains author.
func (v *view) owners(author string) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range v.anns {
		if seen[a.Pubkey] {
			continue
		}
		seen[a.Pubkey] = true
		if v.maintainers(a.Pubkey)[author] {
			out = append(out, a.Pubkey)
		}
	}
	return out
}

// clones lists the clone URLs of every announcement by someone in owner's
// maintainer set, in announcement order.
func (v *view) clones(owner string) []string {
	maint := v.maintainers(owner)
	var out []string
	for _, a := range v.anns {
		if maint[a.Pubkey] {
			out = append(out, a.Clone...)
		}
	}
	return out
}

// states are the states authoritative for owner's repository, from the
// store and from purgatory, so a re-published state can heal a repo whose
// data was lost (grasp.md §10 item 6).
func (v *view) states(owner string) []git.StateCandidate {
	v.load()
	maint := v.maintainers(owner)
	var out []git.StateCandidate
	for _, evs := range [][]*nostr.Event{v.storedStates, v.heldStates} {
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

// latest is the newest stored state (by created_at, then the lower id)
// authored by someone in owner's maintainer set.
func (v *view) latest(owner string) (git.StateCandidate, bool) {
	v.load()
	maint := v.maintainers(owner)
	var best git.StateCandidate
	found := false
	for _, evt := range v.storedStates {
		if !maint[evt.PubKey] {
			continue
		}
		c, ok := candidate(evt)
		if !ok {
			continue
		}
		if !found || c.CreatedAt > best.CreatedAt || (c.CreatedAt == best.CreatedAt && c.EventID < best.EventID) {
			best, found = c, true
		}
	}
	return best, found
}

// stored records a state the operation has just published, so the steps
// after it see the store as it now is.
func (v *view) stored(evt *nostr.Event) {
	v.load()
	v.storedStates = append(v.storedStates, evt)
}

// candidate adapts a state event to push authorisation's form.
func candidate(evt *nostr.Event) (git.StateCandidate, bool) {
	st, err := nip34.ParseState(evt)
	if err != nil {
		return git.StateCandidate{}, false
	}
	refs, head := stateRefs(st)
	return git.StateCandidate{EventID: evt.ID, Author: evt.PubKey, CreatedAt: int64(evt.CreatedAt), Refs: refs, HEAD: head}, true
}
