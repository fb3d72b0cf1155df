package purgatory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// load rebuilds the index from the KV (New, at start-up).
func (p *Purgatory) load(ctx context.Context) error {
	err := p.kv.Scan(ctx, bucketHeld, func(key string, val []byte, _ time.Time) error {
		var e Entry
		if err := json.Unmarshal(val, &e); err != nil || e.Event == nil {
			p.log.Warn("dropping unreadable purgatory entry", "id", key, "error", err)
			return nil
		}
		p.held[key] = &e
		return nil
	})
	if err != nil {
		return fmt.Errorf("load purgatory: %w", err)
	}
	// A crash between holding a replacement and dropping what it replaced
	// leaves both: keep the one that wins.
	for _, e := range p.held {
		if isAddressable(e.Event.Kind) {
			if old, ok := p.idx.byAddr[address(e.Event)]; ok {
				loser := e
				if newer(e.Event, old.Event) {
					loser = old
					p.idx.remove(old)
					p.idx.add(e)
				}
				delete(p.held, loser.Event.ID)
				if err := p.kv.Delete(ctx, bucketHeld, loser.Event.ID); err != nil {
					return fmt.Errorf("load purgatory: drop replaced %s: %w", loser.Event.ID, err)
				}
				continue
			}
		}
		p.idx.add(e)
	}
	err = p.kv.Scan(ctx, bucketPlaceholder, func(key string, val []byte, _ time.Time) error {
		var ph Placeholder
		if err := json.Unmarshal(val, &ph); err != nil {
			p.log.Warn("dropping unreadable placeholder", "id", key, "error", err)
			return nil
		}
		p.putPlaceholderLocked(key, &ph)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load placeholders: %w", err)
	}
	err = p.kv.Scan(ctx, bucketExpired, func(key string, val []byte, _ time.Time) error {
		var at time.Time
		if err := at.UnmarshalText(val); err == nil {
			p.expired[key] = at
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load expired ids: %w", err)
	}
	if err := p.loadPRs(ctx); err != nil {
		return fmt.Errorf("load /prs/ records: %w", err)
	}
	p.log.Info("purgatory loaded", "held", len(p.held), "placeholders", len(p.placeholders))
	p.refreshGauge()
	return nil
}
