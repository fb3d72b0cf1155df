package purgatory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrDuplicate is returned by Hold for an event already held.
var ErrDuplicate = errors.New("purgatory: event already held")

// Hold stores e durably. A held event with the same id answers ErrDuplicate.
// A held announcement (or state) with the same address and author is
// replaced when e is newer, and the replacement gets a fresh TTL; an older
// replaceable event than the one held is refused as a duplicate.
//
// The durable write runs without purgatory's lock: holds of other events
// go on meanwhile. Holds of the same id or address wait for each other
// (inflight.go), and a hold being written counts toward the quotas already
// (holding), so two holds never pass one remaining place together.
func (p *Purgatory) Hold(ctx context.Context, e Entry) error {
	if e.Event == nil {
		return errors.New("purgatory: nil event")
	}
	now := p.clk.Now()
	e.HeldAt = now
	e.Expires = now.Add(p.opts.TTL)
	b, err := json.Marshal(&e)
	if err != nil {
		return fmt.Errorf("purgatory: encode %s: %w", e.Event.ID, err)
	}

	p.mu.Lock()
	var old *Entry
	keys, err := p.writing.claim(&p.mu, func() ([]string, error) {
		old = nil
		if _, ok := p.held[e.Event.ID]; ok {
			return nil, ErrDuplicate
		}
		keys := []string{key(bucketHeld, e.Event.ID)}
		if isAddressable(e.Event.Kind) {
			keys = append(keys, addrKey(address(e.Event)))
			if cur, ok := p.idx.byAddr[address(e.Event)]; ok {
				if newer(cur.Event, e.Event) {
					return nil, ErrDuplicate
				}
				old = cur
				keys = append(keys, key(bucketHeld, cur.Event.ID))
			}
		}
		return keys, nil
	})
	if err == nil && old == nil {
		// A replacement takes its predecessor's place: it costs nothing
		// new. Anything else is admitted now and counted while written.
		if err = p.admit(&e); err != nil {
			p.writing.done(keys)
		} else {
			p.holding.add(&e)
		}
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}

	// The KV TTL is only a safety net for entries a crashed sweep left
	// behind; expiry itself follows e.Expires on the injected clock.
	putErr := p.kv.Put(ctx, bucketHeld, e.Event.ID, b, 0)
	var dropErr error
	if putErr == nil && old != nil {
		dropErr = p.kv.Delete(ctx, bucketHeld, old.Event.ID)
	}

	p.mu.Lock()
	cs, err := p.heldLocked(&e, old, putErr, dropErr)
	p.writing.done(keys)
	p.mu.Unlock()
	p.notify(cs)
	return err
}

// heldLocked makes a hold's durable write visible: e is held when putErr
// is nil, and old (the entry e replaces, if any) has left when dropErr is
// nil too.
func (p *Purgatory) heldLocked(e, old *Entry, putErr, dropErr error) ([]change, error) {
	if old == nil {
		p.holding.remove(e)
	}
	if putErr != nil {
		return nil, fmt.Errorf("purgatory: persist %s: %w", e.Event.ID, putErr)
	}
	p.held[e.Event.ID] = e
	p.idx.add(e)
	cs := []change{{e: *e}}
	p.events.WithLabelValues("held", kindLabel(e.Event.Kind)).Inc()
	defer p.refreshGaugeLocked()
	if old == nil {
		return cs, nil
	}
	if dropErr != nil {
		return cs, fmt.Errorf("purgatory: drop replaced %s: %w", old.Event.ID, dropErr)
	}
	delete(p.held, old.Event.ID)
	p.idx.remove(old)
	p.events.WithLabelValues("replaced", kindLabel(old.Event.Kind)).Inc()
	return append(cs, change{e: *old, why: "replaced"}), nil
}
