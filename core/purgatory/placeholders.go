package purgatory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/grasp-dev/grasp/core/nip34"
)

// AddPlaceholder records a refs/nostr/<id> ref pushed with no PR event yet
// (ph.Repo, EventID, Commit, and Remote and Bytes for the quotas); it
// expires after PlaceholderTTL. A placeholder pushed again replaces the
// old one. The write runs without purgatory's lock (inflight.go).
func (p *Purgatory) AddPlaceholder(ctx context.Context, ph Placeholder) error {
	ph.Expires = p.clk.Now().Add(p.opts.PlaceholderTTL)
	b, err := json.Marshal(&ph)
	if err != nil {
		return err
	}
	k := placeholderKey(ph.Repo, ph.EventID)
	p.mu.Lock()
	keys, _ := p.writing.claim(&p.mu, func() ([]string, error) {
		return []string{key(bucketPlaceholder, k)}, nil
	})
	p.mu.Unlock()
	err = p.kv.Put(ctx, bucketPlaceholder, k, b, 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.writing.done(keys)
	if err != nil {
		return fmt.Errorf("purgatory: persist placeholder %s: %w", ph.EventID, err)
	}
	p.putPlaceholderLocked(k, &ph)
	return nil
}

// putPlaceholderLocked and dropPlaceholderLocked keep placeholders and
// their quota counts in step.
func (p *Purgatory) putPlaceholderLocked(key string, ph *Placeholder) {
	p.dropPlaceholderLocked(key)
	p.placeholders[key] = ph
	p.phUse.add(ph.Repo, ph.Remote, 1, ph.Bytes)
}

func (p *Purgatory) dropPlaceholderLocked(key string) {
	if old, ok := p.placeholders[key]; ok {
		p.phUse.add(old.Repo, old.Remote, -1, -old.Bytes)
		delete(p.placeholders, key)
	}
}

// TakePlaceholders removes and returns the placeholders for eventID (one per
// repo it was pushed to): a PR event has arrived and binds or deletes them.
// A placeholder whose deletion fails stays; the first error is returned
// with what was taken.
func (p *Purgatory) TakePlaceholders(ctx context.Context, eventID string) ([]Placeholder, error) {
	var phKeys []string
	p.mu.Lock()
	keys, _ := p.writing.claim(&p.mu, func() ([]string, error) {
		phKeys = phKeys[:0]
		var keys []string
		for k, ph := range p.placeholders {
			if ph.EventID == eventID {
				phKeys = append(phKeys, k)
				keys = append(keys, key(bucketPlaceholder, k))
			}
		}
		return keys, nil
	})
	p.mu.Unlock()
	gone := make([]bool, len(phKeys))
	var first error
	for i, k := range phKeys {
		if err := p.kv.Delete(ctx, bucketPlaceholder, k); err != nil {
			if first == nil {
				first = fmt.Errorf("purgatory: take placeholder %s: %w", eventID, err)
			}
			continue
		}
		gone[i] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Placeholder
	for i, k := range phKeys {
		if ph, ok := p.placeholders[k]; ok && gone[i] {
			p.dropPlaceholderLocked(k)
			out = append(out, *ph)
		}
	}
	p.writing.done(keys)
	return out, first
}

func placeholderKey(r nip34.RepoRef, id string) string {
	if r.PRs {
		return "prs/" + r.Pubkey + "/" + r.Identifier + "/" + id
	}
	return r.Pubkey + "/" + r.Identifier + "/" + id
}
