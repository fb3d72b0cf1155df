package purgatory

import (
	"context"
	"sort"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Release returns, in publishing order, the events that the
// arrival of git data in repo makes servable:
//   - the repo's own held announcement and every event held with it,
//   - held states for the repo's identifier, and PRs referencing the repo,
//     whose needed objects all satisfy has.
//
// The caller publishes what it gets back, then passes it to Published,
// which takes it out of purgatory: until then the events stay held, so an
// acknowledged event is always in purgatory or in the store (a crash in
// between releases it again at start; storing it twice is a duplicate).
// has reports whether every oid is
// present in the repo; repoHasData says whether the repo has any branch or
// tag yet (an announcement is released by git data, not by an empty repo).
func (p *Purgatory) Release(r nip34.RepoRef, repoHasData bool, has func(oids []string) bool) ([]*nostr.Event, error) {
	var cs []change
	p.mu.Lock()
	evs, err := p.release(r, repoHasData, has, &cs)
	p.mu.Unlock()
	p.notify(cs)
	return evs, err
}

func (p *Purgatory) release(r nip34.RepoRef, repoHasData bool, has func(oids []string) bool, cs *[]change) ([]*nostr.Event, error) {
	// Only entries indexed under r's identifier can be released by r.
	cands := p.idx.byRepoD[r.Identifier]
	var out []*Entry
	// A state whose objects are all present brings the repo its first
	// refs (the caller aligns to it), so it counts as data for the
	// announcement: both go out together, announcement first.
	for _, e := range cands {
		if e.Event.Kind == 30618 && e.Repo.Identifier == r.Identifier {
			if (len(e.Needs) > 0 && has(e.Needs)) || (len(e.Needs) == 0 && repoHasData) {
				out = append(out, e)
				repoHasData = true
			}
		}
	}
	annHeld := false
	for _, e := range cands {
		if e.Event.Kind == 30617 && !e.WithRepo && e.Repo == r {
			annHeld = true
		}
	}
	annHeld = annHeld && repoHasData
	for _, e := range cands {
		switch {
		case e.Event.Kind == 30618:
			// decided above
		case e.Event.Kind == 30617 && !e.WithRepo:
			if e.Repo == r && repoHasData {
				out = append(out, e)
			}
		case e.AwaitEvent != "":
			// released with the event it waits for, below
		case e.WithRepo:
			if e.Repo == r && annHeld {
				out = append(out, e)
			}
		default:
			if e.waitsOn(r) && len(e.Needs) > 0 && has(e.Needs) {
				out = append(out, e)
			}
		}
	}
	// events waiting for a released event go with it, transitively
	released := map[string]bool{}
	for _, e := range out {
		released[e.Event.ID] = true
	}
	for i := 0; i < len(out); i++ {
		for _, e := range p.idx.byAwait[out[i].Event.ID] {
			if !released[e.Event.ID] {
				released[e.Event.ID] = true
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return releaseOrder(out[i]) < releaseOrder(out[j]) })
	evs := make([]*nostr.Event, 0, len(out))
	for _, e := range out {
		if p.releasing[e.Event.ID] {
			continue // another release is publishing it
		}
		p.releasing[e.Event.ID] = true
		evs = append(evs, e.Event)
	}
	return evs, nil
}

// Published ends the release of events Release handed out: the caller
// has stored each (or dropped it on re-check), and now they leave
// purgatory, with why "released". An event whose removal fails stays held
// and is handed out by the next Release again.
func (p *Purgatory) Published(ctx context.Context, evs []*nostr.Event) error {
	_, err := p.remove(ctx, "released", func() []*Entry {
		var out []*Entry
		for _, evt := range evs {
			if e, ok := p.held[evt.ID]; ok {
				out = append(out, e)
			}
		}
		return out
	})
	// Handed out until now: while the removals were written, no other
	// Release could hand them out again.
	p.mu.Lock()
	for _, evt := range evs {
		delete(p.releasing, evt.ID)
	}
	p.mu.Unlock()
	return err
}

// Unreleased ends the release of events whose publishing failed (a store
// error): they stay held, as the OK that held them promised, and a later
// Release hands them out again. Removing them (Published) would lose an
// event that was acknowledged.
func (p *Purgatory) Unreleased(evs []*nostr.Event) {
	p.mu.Lock()
	for _, evt := range evs {
		delete(p.releasing, evt.ID)
	}
	p.mu.Unlock()
}

func (e *Entry) waitsOn(r nip34.RepoRef) bool {
	if e.Repo == r {
		return true
	}
	for _, a := range e.Also {
		if a == r {
			return true
		}
	}
	return false
}

// releaseOrder publishes announcements before states before everything else,
// oldest first within a group, so subscribers see a repo before its content.
func releaseOrder(e *Entry) int64 {
	group := int64(2)
	if e.AwaitEvent != "" {
		group = 3
	}
	switch e.Event.Kind {
	case 30617:
		group = 0
	case 30618:
		group = 1
	}
	return group<<40 | int64(e.Event.CreatedAt)&(1<<40-1)
}
