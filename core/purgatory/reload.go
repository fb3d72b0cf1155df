package purgatory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Getter is what Reload needs of the KV beyond Put/Delete/Scan; store.Side
// has it.
type Getter interface {
	Get(ctx context.Context, bucket, key string) ([]byte, bool, error)
}

// Reload brings one entry of the index in line with the KV, after another
// grasp instance sharing the KV (the postgres store) changed it: an entry
// held there is held here (OnHold runs), one released there leaves here
// (OnRemove runs with why "elsewhere"), placeholders and expired ids
// follow. It claims the entry (inflight.go) before it reads it, so it
// never undoes a local change made meanwhile, and reads without
// purgatory's lock; a change this instance made itself is a no-op.
// It returns the entry when the reload newly held one.
func (p *Purgatory) Reload(ctx context.Context, bucket, k string) (*Entry, error) {
	g, ok := p.kv.(Getter)
	if !ok {
		return nil, errors.New("purgatory: Reload needs a KV with Get")
	}
	switch bucket {
	case bucketPRs:
		return nil, p.reloadPRs(ctx, g, k)
	case bucketHeld, bucketPlaceholder, bucketExpired:
	default:
		return nil, nil
	}
	p.mu.Lock()
	keys, _ := p.writing.claim(&p.mu, func() ([]string, error) { return []string{key(bucket, k)}, nil })
	p.mu.Unlock()
	val, found, err := g.Get(ctx, bucket, k)
	var cs []change
	p.mu.Lock()
	if err != nil {
		err = fmt.Errorf("purgatory: reload %s/%s: %w", bucket, k, err)
	} else {
		err = p.reloadLocked(bucket, k, val, found, &cs)
	}
	p.writing.done(keys)
	p.mu.Unlock()
	p.notify(cs)
	for _, c := range cs {
		if c.why == "" {
			e := c.e
			return &e, err
		}
	}
	return nil, err
}

// reloadLocked makes what the KV holds under bucket/key (val, or nothing
// when !ok) the index's.
func (p *Purgatory) reloadLocked(bucket, key string, val []byte, ok bool, cs *[]change) error {
	switch bucket {
	case bucketHeld:
		old, had := p.held[key]
		if !ok {
			if had {
				delete(p.held, key)
				p.idx.remove(old)
				p.refreshGaugeLocked()
				*cs = append(*cs, change{e: *old, why: "elsewhere"})
			}
			return nil
		}
		var e Entry
		if err := json.Unmarshal(val, &e); err != nil || e.Event == nil {
			return fmt.Errorf("purgatory: reload %s: unreadable entry: %v", key, err)
		}
		if had {
			p.idx.remove(old)
		}
		p.held[key] = &e
		p.idx.add(&e)
		p.refreshGaugeLocked()
		if !had {
			*cs = append(*cs, change{e: e})
		}
	case bucketPlaceholder:
		if !ok {
			p.dropPlaceholderLocked(key)
			return nil
		}
		var ph Placeholder
		if err := json.Unmarshal(val, &ph); err != nil {
			return fmt.Errorf("purgatory: reload placeholder %s: %w", key, err)
		}
		p.putPlaceholderLocked(key, &ph)
	case bucketExpired:
		if !ok {
			delete(p.expired, key)
			return nil
		}
		var at time.Time
		if err := at.UnmarshalText(val); err == nil {
			p.expired[key] = at
		}
	}
	return nil
}

// Resync reloads every entry from the KV, after notifications of another
// instance's changes may have been lost.
func (p *Purgatory) Resync(ctx context.Context) error {
	if _, ok := p.kv.(Getter); !ok {
		return errors.New("purgatory: Resync needs a KV with Get")
	}
	keys := map[string][]string{}
	for _, b := range []string{bucketHeld, bucketPlaceholder, bucketExpired, bucketPRs} {
		if err := p.kv.Scan(ctx, b, func(key string, _ []byte, _ time.Time) error {
			keys[b] = append(keys[b], key)
			return nil
		}); err != nil {
			return fmt.Errorf("purgatory: resync: %w", err)
		}
	}
	p.mu.Lock()
	for id := range p.held {
		keys[bucketHeld] = append(keys[bucketHeld], id)
	}
	for k := range p.placeholders {
		keys[bucketPlaceholder] = append(keys[bucketPlaceholder], k)
	}
	for k := range p.expired {
		keys[bucketExpired] = append(keys[bucketExpired], k)
	}
	p.mu.Unlock()
	p.prs.mu.Lock()
	for k := range p.prs.records {
		keys[bucketPRs] = append(keys[bucketPRs], k)
	}
	p.prs.mu.Unlock()
	for b, ks := range keys {
		for _, k := range ks {
			if _, err := p.Reload(ctx, b, k); err != nil {
				return err
			}
		}
	}
	return nil
}
