package store

import (
	"context"
	"time"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
)

// Privacy is GRASP-08's durable record, kept beside the events on both
// backends (issue 23): per event, what core/visibility decided at its
// acceptance (the private repositories it belongs to through its ancestry,
// which a later deletion of an ancestor must not erase); per repository,
// whether it is (or ever was) private and who read it last. The values are
// core/visibility's to encode; this file only keeps them.
//
// Event records are written once, before their event is stored: with badger
// in the same write-ahead log the event's group commit then syncs (as the
// large-content records are), so an event is never durable without its
// record; with PostgreSQL by a committed insert before the event's own
// (grasp_privacy_event, migration 4). Repository records are side-table
// entries (PrivacyRepoBucket): durable at return, serialised across
// instances, and announced to the other instances on PostgreSQL (Follow's
// SideChanged), which is how a revocation made through one instance
// reaches the others.
type Privacy struct{ s *Store }

// Privacy returns the GRASP-08 record.
func (s *Store) Privacy() *Privacy { return &Privacy{s: s} }

// Side-table buckets of the record.
const (
	// PrivacyRepoBucket holds one entry per repository that is or was
	// private, keyed by core/visibility.
	PrivacyRepoBucket = "grasp08-repo"
	// privacyMetaBucket holds the record's own state (the migration mark).
	privacyMetaBucket = "grasp08-meta"
)

// maxPrivacyValue bounds one event's record (a few coordinates).
const maxPrivacyValue = 64 << 10

// PutEvent records val for event id, before the event itself is stored.
// With badger the record is durable once the event's own write is (the
// same logs, synced by its group commit); a record too big for the tree
// waits for a sync of its own. Putting it again replaces it.
func (p *Privacy) PutEvent(ctx context.Context, id string, val []byte) error {
	s := p.s
	if s.closed.Load() {
		return errClosed
	}
	if len(val) > maxPrivacyValue {
		return outcome.Errorf(outcome.Invalid, "privacy record of %d bytes exceeds %d", len(val), maxPrivacyValue)
	}
	if !nip34.IsHex64(id) {
		return outcome.Errorf(outcome.Invalid, "event id %q", id)
	}
	return s.be.putPrivacy(ctx, id, val)
}

// Events returns the records of those of ids that have one.
func (p *Privacy) Events(ctx context.Context, ids []string) (map[string][]byte, error) {
	s := p.s
	if s.closed.Load() {
		return nil, errClosed
	}
	if len(ids) == 0 {
		return map[string][]byte{}, nil
	}
	return s.be.privacyEvents(ctx, ids)
}

// The repository records' methods below have no context in
// visibility.Records yet: their side-table work runs on Background, as
// before issue 28 part 5 gave the side table one.

// UpdateRepo reads repository key's record and, when fn says so, writes
// the value fn returns, atomically: no other UpdateRepo (nor side-table
// update) of any instance on the store interleaves. Durable at return.
func (p *Privacy) UpdateRepo(key string, fn func(old []byte, ok bool) (val []byte, write bool, err error)) error {
	return p.s.side.Update(context.Background(), func(tx SideTx) error {
		old, ok, err := tx.Get(PrivacyRepoBucket, key)
		if err != nil {
			return err
		}
		val, write, err := fn(append([]byte(nil), old...), ok)
		if err != nil || !write {
			return err
		}
		return tx.Put(PrivacyRepoBucket, key, val, 0)
	})
}

// Repo returns repository key's record.
func (p *Privacy) Repo(key string) ([]byte, bool, error) {
	return p.s.side.Get(context.Background(), PrivacyRepoBucket, key)
}

// Repos visits every repository record.
func (p *Privacy) Repos(fn func(key string, val []byte) error) error {
	return p.s.side.Scan(context.Background(), PrivacyRepoBucket, func(key string, val []byte, _ time.Time) error {
		return fn(key, append([]byte(nil), val...))
	})
}

// Mark returns the value of the record's own state entry name ("" when
// unset): which migration has run.
func (p *Privacy) Mark(name string) (string, error) {
	v, ok, err := p.s.side.Get(context.Background(), privacyMetaBucket, name)
	if err != nil || !ok {
		return "", err
	}
	return string(v), nil
}

// SetMark sets the record's own state entry name; durable at return.
func (p *Privacy) SetMark(name, val string) error {
	return p.s.side.Put(context.Background(), privacyMetaBucket, name, []byte(val), 0)
}
