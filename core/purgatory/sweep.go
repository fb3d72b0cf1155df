package purgatory

import (
	"context"
	"fmt"
)

// Sweep drops entries whose TTL has passed and placeholders whose TTL has
// passed, and forgets old expired ids. Expired event ids are remembered for
// ExpiredMemory so a sync peer cannot feed the same dataless event back.
// It decides under purgatory's lock and writes without it (inflight.go);
// what a write failed for stays as it was, and the first error is
// returned with what the sweep did.
func (p *Purgatory) Sweep(ctx context.Context) (expired []Entry, placeholders []Placeholder, err error) {
	now := p.clk.Now()
	forget := now.Add(p.opts.ExpiredMemory)
	mark, _ := forget.MarshalText()

	var (
		held    []*Entry
		phKeys  []string
		phs     []*Placeholder
		forgets []string
	)
	p.mu.Lock()
	keys, _ := p.writing.claim(&p.mu, func() ([]string, error) {
		held, phKeys, phs, forgets = nil, nil, nil, nil
		var keys []string
		expiring := map[string]bool{}
		for id, e := range p.held {
			if !now.Before(e.Expires) {
				expiring[id] = true
				held = append(held, e)
				keys = append(keys, key(bucketHeld, id), key(bucketExpired, id))
			}
		}
		for k, ph := range p.placeholders {
			if !now.Before(ph.Expires) {
				phKeys, phs = append(phKeys, k), append(phs, ph)
				keys = append(keys, key(bucketPlaceholder, k))
			}
		}
		for id, at := range p.expired {
			// one expiring again now gets a new mark instead
			if !expiring[id] && !now.Before(at) {
				forgets = append(forgets, id)
				keys = append(keys, key(bucketExpired, id))
			}
		}
		return keys, nil
	})
	p.mu.Unlock()

	fail := func(e error) {
		if err == nil {
			err = e
		}
	}
	heldGone, marked := make([]bool, len(held)), make([]bool, len(held))
	for i, e := range held {
		id := e.Event.ID
		if derr := p.kv.Delete(ctx, bucketHeld, id); derr != nil {
			fail(fmt.Errorf("purgatory: remove %s: %w", id, derr))
			continue
		}
		heldGone[i] = true
		if perr := p.kv.Put(ctx, bucketExpired, id, mark, 0); perr != nil {
			fail(fmt.Errorf("purgatory: remember expired %s: %w", id, perr))
			continue
		}
		marked[i] = true
	}
	phGone := make([]bool, len(phs))
	for i, k := range phKeys {
		if derr := p.kv.Delete(ctx, bucketPlaceholder, k); derr != nil {
			fail(fmt.Errorf("purgatory: drop placeholder %s: %w", k, derr))
			continue
		}
		phGone[i] = true
	}
	forgotten := make([]bool, len(forgets))
	for i, id := range forgets {
		if derr := p.kv.Delete(ctx, bucketExpired, id); derr != nil {
			fail(fmt.Errorf("purgatory: forget expired %s: %w", id, derr))
			continue
		}
		forgotten[i] = true
	}

	var cs []change
	p.mu.Lock()
	for i, e := range held {
		if heldGone[i] {
			p.removedLocked(e, "expired", &cs)
			if marked[i] {
				p.expired[e.Event.ID] = forget
			}
			expired = append(expired, *e)
		}
	}
	for i, k := range phKeys {
		if phGone[i] {
			p.dropPlaceholderLocked(k)
			placeholders = append(placeholders, *phs[i])
		}
	}
	for i, id := range forgets {
		if forgotten[i] {
			delete(p.expired, id)
		}
	}
	p.writing.done(keys)
	p.mu.Unlock()
	p.notify(cs)
	return expired, placeholders, err
}
