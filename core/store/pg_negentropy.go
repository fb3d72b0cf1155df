package store

import (
	"context"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/negindex"
	"github.com/grasp-dev/grasp/core/outcome"
)

// negentropyStorage answers a NEG-OPEN filter on PostgreSQL with one query
// of the (created_at, id) pairs it matches, streamed into a negindex
// Snapshot. A session built its set through query instead, a page of 500
// whole events at a time: at 200,001 events that was 400 queries reading
// and decoding every tag and content, and the client was dropped before the
// set was ready (issue 27). The query holds its connection for as long as
// the rows take to arrive, not for as long as a client takes to read (the
// concern of pg_query.go's paging, F25): the rows go into memory at once,
// at most max+1 of them. ctx bounds it (the gate's negentropy_open_timeout)
// and names the client whose query slot it takes.
func (s *pgStore) negentropyStorage(ctx context.Context, f nostr.Filter, max int) (negentropy.Storage, bool, error) {
	if f.LimitZero {
		return negindex.NewSnapshotBuilder(0).Snapshot(), true, nil
	}
	where, args, ok := pgWhere(withoutRepeats(f))
	if !ok {
		return negindex.NewSnapshotBuilder(0).Snapshot(), true, nil
	}
	// One more than max tells a filter matching too many from one
	// matching exactly max (effectiveLimit); a filter's own lower limit
	// is its newest events, as a query gives them.
	limit := int64(max) + 1
	order := ""
	if f.Limit > 0 && int64(f.Limit) < limit {
		limit = int64(f.Limit)
		order = " ORDER BY created_at DESC, id"
	}
	a := newArgs(args)
	q := `SELECT created_at, id FROM event WHERE ` + where + order + ` LIMIT ` + a.add(limit)
	client, isClient := clientip.FromContext(ctx)
	db, release, err := s.pools.forQuery(ctx, client, isClient)
	if err != nil {
		return nil, true, outcome.Errorf(outcome.Error, "negentropy set: %w", err)
	}
	defer release()
	rows, err := db.QueryContext(ctx, q, a.list...)
	if err != nil {
		return nil, true, outcome.Errorf(outcome.Error, "negentropy set: %w", err)
	}
	defer rows.Close()
	set := negindex.NewSnapshotBuilder(0)
	n := int64(0)
	for rows.Next() {
		var (
			createdAt int64
			id        string
		)
		if err := rows.Scan(&createdAt, &id); err != nil {
			return nil, true, outcome.Errorf(outcome.Error, "negentropy set: %w", err)
		}
		if n++; n > int64(max) {
			return nil, true, ErrTooManyEvents
		}
		// Add leaves out what no Snapshot holds (a malformed id); the
		// store refuses such events on the way in (validateEvent)
		set.Add(nostr.Timestamp(createdAt), id)
	}
	if err := rows.Err(); err != nil {
		return nil, true, outcome.Errorf(outcome.Error, "negentropy set: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, true, fmt.Errorf("negentropy set: %w", err)
	}
	s.m.queries.WithLabelValues("negentropy_set").Inc()
	return set.Snapshot(), true, nil
}
