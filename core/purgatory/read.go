package purgatory

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Get returns the held event with id.
func (p *Purgatory) Get(id string) (Entry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.held[id]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// Find returns the held entries that match keep, oldest first. It looks at
// every held entry: for start-up and periodic work, never per event.
func (p *Purgatory) Find(keep func(e *Entry) bool) []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Entry
	for _, e := range p.held {
		if keep(e) {
			out = append(out, *e)
		}
	}
	oldestFirst(out)
	return out
}

// QueryHeld returns the held events that match f (ids, authors, kinds, tag
// filters; the read side of purgatory the GRASP rules see, policy.Held),
// oldest first. Filters with ids, with kinds and a `d` tag, or with authors
// are answered from the index.
func (p *Purgatory) QueryHeld(_ context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	p.mu.Lock()
	cands, ok := p.idx.candidates(p.held, f)
	if !ok {
		p.mu.Unlock()
		return events(p.Find(func(e *Entry) bool { return f.Matches(e.Event) })), nil
	}
	var out []Entry
	for _, e := range cands {
		if f.Matches(e.Event) {
			out = append(out, *e)
		}
	}
	p.mu.Unlock()
	oldestFirst(out)
	return events(out), nil
}

// byKindD returns the held events of kind with identifier d, oldest first.
func (p *Purgatory) byKindD(kind int, d string) []Entry {
	p.mu.Lock()
	var out []Entry
	for _, e := range p.idx.byKindD[kindD{kind, d}] {
		if e.Repo.Identifier == d {
			out = append(out, *e)
		}
	}
	p.mu.Unlock()
	oldestFirst(out)
	return out
}

// Announcements returns the held announcements with identifier d.
func (p *Purgatory) Announcements(d string) []*nostr.Event {
	return events(p.byKindD(30617, d))
}

// States returns the held repo states with identifier d.
func (p *Purgatory) States(d string) []*nostr.Event {
	return events(p.byKindD(30618, d))
}

// HeldAnnouncements returns the held announcement entries of repo (one, or
// none).
func (p *Purgatory) HeldAnnouncements(r nip34.RepoRef) []Entry {
	var out []Entry
	for _, e := range p.byKindD(30617, r.Identifier) {
		if e.Repo == r && !e.WithRepo {
			out = append(out, e)
		}
	}
	return out
}

// WaitingFor returns up to max of the entries whose release waits for
// repo's git data (Repo or Also), oldest first, and how many there are:
// the read the repository's page shows (issue 26 part 5). It looks only at
// the entries of repo's identifier.
func (p *Purgatory) WaitingFor(r nip34.RepoRef, max int) ([]Entry, int) {
	p.mu.Lock()
	var out []Entry
	for _, e := range p.idx.byRepoD[r.Identifier] {
		if e.waitsOn(r) {
			out = append(out, *e)
		}
	}
	p.mu.Unlock()
	oldestFirst(out)
	return out[:min(len(out), max)], len(out)
}

// HasAnnouncement reports whether the announcement of repo is held.
func (p *Purgatory) HasAnnouncement(r nip34.RepoRef) bool {
	for _, e := range p.byKindD(30617, r.Identifier) {
		if e.Repo == r {
			return true
		}
	}
	return false
}

// Expired reports whether id expired from purgatory without its git data
// within the remembered window.
func (p *Purgatory) Expired(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.expired[id]
	return ok
}

// Len is the number of held events.
func (p *Purgatory) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// Placeholders counts the refs/nostr/<id> refs waiting for their PR event.
func (p *Purgatory) Placeholders() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.placeholders)
}
