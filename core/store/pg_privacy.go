package store

import (
	"context"

	"github.com/lib/pq"

	"github.com/grasp-dev/grasp/core/outcome"
)

// putPrivacy inserts (or replaces) the record in grasp_privacy_event
// (migration 4), committed before the event's own insert, with the
// records put beside it (group commit, pg_write.go).
func (s *pgStore) putPrivacy(ctx context.Context, id string, val []byte) error {
	if err := s.privacy.do(ctx, &pgInsert{id: id, val: val}, s.putPrivacyBatch); err != nil {
		return outcome.Errorf(outcome.Error, "record the privacy of %s: %w", id, err)
	}
	return nil
}

// privacyEvents reads the records of ids in one query.
func (s *pgStore) privacyEvents(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	rows, err := s.pgDB().QueryContext(ctx, `SELECT id, val FROM grasp_privacy_event WHERE id = ANY($1)`, pq.Array(ids))
	if err != nil {
		return nil, outcome.Errorf(outcome.Error, "read privacy records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var val []byte
		if err := rows.Scan(&id, &val); err != nil {
			return nil, outcome.Errorf(outcome.Error, "read privacy records: %w", err)
		}
		out[id] = val
	}
	if err := rows.Err(); err != nil {
		return nil, outcome.Errorf(outcome.Error, "read privacy records: %w", err)
	}
	return out, nil
}
