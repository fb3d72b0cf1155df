package purgatory

import (
	"context"
	"fmt"
	"time"
)

// Remove drops a held event (it was released through another path, or
// superseded). It reports whether anything was held.
func (p *Purgatory) Remove(ctx context.Context, id, why string) (bool, error) {
	out, err := p.remove(ctx, why, func() []*Entry {
		if e, ok := p.held[id]; ok {
			return []*Entry{e}
		}
		return nil
	})
	return len(out) > 0, err
}

// DeleteRequested applies a NIP-09 deletion by author: held events with one
// of ids, or at one of addrs ("<kind>:<pubkey>:<d>") with created_at not
// after the deletion, are dropped. Entries of other authors are untouched.
// It returns the removed entries.
func (p *Purgatory) DeleteRequested(ctx context.Context, author string, ids, addrs []string, at time.Time) ([]Entry, error) {
	idset := map[string]bool{}
	for _, id := range ids {
		idset[id] = true
	}
	addrset := map[string]bool{}
	for _, a := range addrs {
		addrset[a] = true
	}
	return p.remove(ctx, "deleted", func() []*Entry {
		var out []*Entry
		for id, e := range p.idx.byAuthor[author] {
			if idset[id] || (isAddressable(e.Event.Kind) && addrset[address(e.Event)] && !e.Event.CreatedAt.Time().After(at)) {
				out = append(out, e)
			}
		}
		return out
	})
}

// remove takes the held entries pick chooses out of purgatory, with why.
// pick runs under mu, again after waiting for a write to one of them
// (inflight.go); the deletions run without the lock and are durable before
// the entries leave the index. An entry whose deletion failed stays held;
// the first such error is returned with the entries that left.
func (p *Purgatory) remove(ctx context.Context, why string, pick func() []*Entry) ([]Entry, error) {
	p.mu.Lock()
	var es []*Entry
	keys, _ := p.writing.claim(&p.mu, func() ([]string, error) {
		es = pick()
		keys := make([]string, len(es))
		for i, e := range es {
			keys[i] = key(bucketHeld, e.Event.ID)
		}
		return keys, nil
	})
	p.mu.Unlock()

	gone := make([]bool, len(es))
	var first error
	for i, e := range es {
		if err := p.kv.Delete(ctx, bucketHeld, e.Event.ID); err != nil {
			if first == nil {
				first = fmt.Errorf("purgatory: remove %s: %w", e.Event.ID, err)
			}
			continue
		}
		gone[i] = true
	}

	p.mu.Lock()
	var cs []change
	var out []Entry
	for i, e := range es {
		if gone[i] {
			p.removedLocked(e, why, &cs)
			out = append(out, *e)
		}
	}
	p.writing.done(keys)
	p.mu.Unlock()
	p.notify(cs)
	return out, first
}

// removedLocked takes e, whose durable record is gone, out of the index and
// records the hook call in cs.
func (p *Purgatory) removedLocked(e *Entry, why string, cs *[]change) {
	if p.held[e.Event.ID] != e {
		return // not the entry the removal was decided on (its key was claimed: never)
	}
	delete(p.held, e.Event.ID)
	p.idx.remove(e)
	p.events.WithLabelValues(why, kindLabel(e.Event.Kind)).Inc()
	p.refreshGaugeLocked()
	*cs = append(*cs, change{e: *e, why: why})
}
