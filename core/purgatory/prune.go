package purgatory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
)

// bucketPrune holds the prune schedule: repositories that lost data
// (expired or mismatched refs/nostr placeholders, GRASP-06 /prs/ data)
// whose objects must still be removed from disk.
const bucketPrune = "prune"

// PruneDue is a repository on the prune schedule: data it held stopped
// being referenced at Since; objects that arrived after Since are not its.
type PruneDue struct {
	Repo  nip34.RepoRef `json:"repo"`
	Since time.Time     `json:"since"`
}

// pruneKey is the schedule's key of r (its placeholder scope).
func pruneKey(r nip34.RepoRef) string {
	repo, _ := scopes(r)
	return repo
}

// SchedulePrune records that r holds data unreferenced since at. The
// schedule is durable, in the side table every instance shares: whoever
// runs the sweep prunes it, after a restart too, and a repository stays on
// it until Pruned (audit F02 follow-up: a repository dropped from an
// in-memory list at the first sweep after its placeholder expired kept the
// data for good when nostr_ref_ttl was shorter than the prune grace). A
// later at replaces an earlier one: the prune must cover the newest loss.
func (p *Purgatory) SchedulePrune(ctx context.Context, r nip34.RepoRef, at time.Time) error {
	p.pruneMu.Lock()
	defer p.pruneMu.Unlock()
	key := pruneKey(r)
	if g, ok := p.kv.(Getter); ok {
		if val, ok, err := g.Get(ctx, bucketPrune, key); err == nil && ok {
			var cur PruneDue
			if json.Unmarshal(val, &cur) == nil && !cur.Since.Before(at) {
				return nil
			}
		}
	}
	b, err := json.Marshal(PruneDue{Repo: r, Since: at})
	if err != nil {
		return err
	}
	if err := p.kv.Put(ctx, bucketPrune, key, b, 0); err != nil {
		return fmt.Errorf("purgatory: schedule a prune of %s: %w", key, err)
	}
	return nil
}

// DuePrunes returns the scheduled repositories, oldest loss first.
func (p *Purgatory) DuePrunes(ctx context.Context) ([]PruneDue, error) {
	var out []PruneDue
	var bad []string
	err := p.kv.Scan(ctx, bucketPrune, func(key string, val []byte, _ time.Time) error {
		var d PruneDue
		if err := json.Unmarshal(val, &d); err != nil {
			p.log.Warn("dropping unreadable prune schedule entry", "key", key, "error", err)
			bad = append(bad, key)
			return nil
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("purgatory: read the prune schedule: %w", err)
	}
	for _, key := range bad {
		if err := p.kv.Delete(ctx, bucketPrune, key); err != nil {
			return nil, fmt.Errorf("purgatory: drop prune schedule entry %s: %w", key, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out, nil
}

// Pruned takes d off the schedule once a prune covering d.Since has run
// (or the repository is gone), unless a later loss was scheduled meanwhile.
func (p *Purgatory) Pruned(ctx context.Context, d PruneDue) error {
	p.pruneMu.Lock()
	defer p.pruneMu.Unlock()
	key := pruneKey(d.Repo)
	if g, ok := p.kv.(Getter); ok {
		if val, ok, err := g.Get(ctx, bucketPrune, key); err == nil && ok {
			var cur PruneDue
			if json.Unmarshal(val, &cur) == nil && cur.Since.After(d.Since) {
				return nil
			}
		}
	}
	if err := p.kv.Delete(ctx, bucketPrune, key); err != nil {
		return fmt.Errorf("purgatory: take %s off the prune schedule: %w", key, err)
	}
	return nil
}
