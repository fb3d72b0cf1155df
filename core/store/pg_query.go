package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lib/pq"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/outcome"
)

// Reads on PostgreSQL are done here, a page at a time: a query takes a
// connection for one page (at most pgPageRows events, and no more after
// pgPageBytes of them), gives it back, and only then hands the page to
// its reader. The next page is fetched once the reader has taken the
// last, after the last event sent (keyset paging on created_at, id, the
// order every answer is in). So a client that does not read holds no
// connection, and at most a page in memory (audit 2026-11b, F25: the
// eventstore backend streamed rows from an open connection into the
// client's channel, and 90 websockets that did not read held them all).
const (
	pgPageRows  = 500
	pgPageBytes = 256 << 10
)

// query answers QueryEvents on PostgreSQL: up to limit events matching
// f, newest first (ties by id). The first page is read before it returns,
// so a failing query is an error, not an empty channel.
func (s *pgStore) query(ctx context.Context, f nostr.Filter, limit int) (chan *nostr.Event, error) {
	pg := &pgPager{s: s, f: f, left: limit, noContent: withoutContent(ctx)}
	pg.client, pg.isClient = clientip.FromContext(ctx)
	page, err := pg.next(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan *nostr.Event)
	go func() {
		defer close(ch)
		for {
			for _, evt := range page {
				select {
				case ch <- evt:
				case <-ctx.Done():
					return
				}
			}
			if pg.done() {
				return
			}
			if page, err = pg.next(ctx); err != nil {
				if ctx.Err() == nil {
					s.log.Error("reading the next page of a query", "filter", f.String(), "error", err)
				}
				return
			}
		}
	}()
	return ch, nil
}

// pgPager reads one query's pages.
type pgPager struct {
	s        *pgStore
	f        nostr.Filter
	left     int // events still to send
	client   string
	isClient bool
	// after is the last event sent; the next page starts after it.
	after *nostr.Event
	// end is set once a page came back short: nothing more matches.
	end bool
	// noContent: the reader needs no contents (WithoutContent); none is
	// read or detoasted, and a page's bytes are its tags'.
	noContent bool
}

func (p *pgPager) done() bool { return p.end || p.left <= 0 }

func (p *pgPager) next(ctx context.Context) ([]*nostr.Event, error) {
	where, args, ok := pgWhere(p.f)
	if !ok {
		p.end = true
		return nil, nil
	}
	if p.after != nil {
		// created_at <= t on its own is what the index on created_at
		// takes as a bound; the former (created_at < t OR (created_at = t
		// AND id > i)) was only a filter, so each page scanned the index
		// from the newest event again: at 200,001 events a page 150,000
		// deep read 150,001 rows to keep 500, 713 ms instead of 5 ms
		// (issue 27).
		a := newArgs(args)
		at := a.add(int64(p.after.CreatedAt))
		where += fmt.Sprintf(" AND created_at <= %s AND (created_at < %s OR id > %s)", at, at, a.add(p.after.ID))
		args = a.list
	}
	a := newArgs(args)
	rows := min(p.left, pgPageRows)
	// The inner query takes at most `rows` events in order; the outer one
	// keeps them while the bytes before each stay under pgPageBytes (the
	// first is always kept, so a page holds at most pgPageBytes plus one
	// event). octet_length of the content needs no detoasting.
	content, size := "content", "octet_length(content) + octet_length(tags::text)"
	if p.noContent {
		content, size = "'' AS content", "octet_length(tags::text)"
	}
	q := `SELECT id, pubkey, created_at, kind, tags, content, sig FROM (
		SELECT *, sum(sz) OVER (ORDER BY created_at DESC, id ROWS UNBOUNDED PRECEDING) AS upto FROM (
			SELECT id, pubkey, created_at, kind, tags, ` + content + `, sig,
				` + size + ` AS sz
			FROM event WHERE ` + where + ` ORDER BY created_at DESC, id LIMIT ` + a.add(rows) + `
		) page
	) sized WHERE upto - sz < ` + a.add(pgPageBytes) + ` ORDER BY created_at DESC, id`
	db, release, err := p.s.pools.forQuery(ctx, p.client, p.isClient)
	if err != nil {
		return nil, outcome.Errorf(outcome.Error, "query events: %w", err)
	}
	defer release()
	res, err := db.QueryContext(ctx, q, a.list...)
	if err != nil {
		return nil, outcome.Errorf(outcome.Error, "query events: %w", err)
	}
	page, bytes, err := scanEvents(res)
	if err != nil {
		return nil, outcome.Errorf(outcome.Error, "query events: %w", err)
	}
	p.left -= len(page)
	if len(page) > 0 {
		p.after = page[len(page)-1]
	}
	// A short page is the end, unless the byte bound cut it: the events
	// kept then hold pgPageBytes or more (bytes counts what sz counts).
	if len(page) < rows && bytes < pgPageBytes {
		p.end = true
	}
	return page, nil
}

// count answers CountEvents on PostgreSQL, on the pool of query.
func (s *pgStore) count(ctx context.Context, f nostr.Filter) (int64, error) {
	where, args, ok := pgWhere(f)
	if !ok {
		return 0, nil
	}
	client, isClient := clientip.FromContext(ctx)
	db, release, err := s.pools.forQuery(ctx, client, isClient)
	if err != nil {
		return 0, err
	}
	defer release()
	var n int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM event WHERE `+where, args...).Scan(&n); err != nil {
		return 0, err
	}
	return n, nil
}

// pgArgs numbers a query's parameters.
type pgArgs struct{ list []any }

func newArgs(list []any) *pgArgs { return &pgArgs{list: list} }

func (a *pgArgs) add(v any) string {
	a.list = append(a.list, v)
	return "$" + strconv.Itoa(len(a.list))
}

// pgWhere renders f as the conditions on table event, with their
// parameters. ok is false when nothing can match (a kind, since or until
// that no row can hold, a tag with no values, a NIP-50 search, which
// neither backend answers). Tag conditions use the tagvalues column, which
// holds "<letter>:<value>" for every single-letter tag.
func pgWhere(f nostr.Filter) (where string, args []any, ok bool) {
	if f.Search != "" {
		return "", nil, false
	}
	a := newArgs(nil)
	conds := []string{"true"}
	if len(f.IDs) > 0 {
		conds = append(conds, "id = ANY("+a.add(pq.Array(f.IDs))+"::text[])")
	}
	if len(f.Authors) > 0 {
		conds = append(conds, "pubkey = ANY("+a.add(pq.Array(f.Authors))+"::text[])")
	}
	if len(f.Kinds) > 0 {
		kinds := make([]int64, 0, len(f.Kinds))
		for _, k := range f.Kinds {
			if k >= math.MinInt32 && k <= math.MaxInt32 { // the column is an integer
				kinds = append(kinds, int64(k))
			}
		}
		if len(kinds) == 0 {
			return "", nil, false
		}
		conds = append(conds, "kind = ANY("+a.add(pq.Array(kinds))+"::integer[])")
	}
	for name, values := range f.Tags {
		if len(values) == 0 {
			return "", nil, false
		}
		tv := make([]string, len(values))
		for i, v := range values {
			tv[i] = name + ":" + v
		}
		conds = append(conds, "tagvalues && "+a.add(pq.Array(tv))+"::text[]")
	}
	if f.Since != nil {
		switch since := int64(*f.Since); {
		case since > math.MaxInt32:
			return "", nil, false
		case since > math.MinInt32:
			conds = append(conds, "created_at >= "+a.add(since))
		}
	}
	if f.Until != nil {
		switch until := int64(*f.Until); {
		case until < math.MinInt32:
			return "", nil, false
		case until < math.MaxInt32:
			conds = append(conds, "created_at <= "+a.add(until))
		}
	}
	return strings.Join(conds, " AND "), a.list, true
}

// scanEvents reads rows of id, pubkey, created_at, kind, tags, content,
// sig and closes them; bytes is the content and tags text they held.
func scanEvents(rows *sql.Rows) (evs []*nostr.Event, bytes int, err error) {
	defer rows.Close()
	for rows.Next() {
		var (
			e    nostr.Event
			tags []byte
		)
		if err := rows.Scan(&e.ID, &e.PubKey, &e.CreatedAt, &e.Kind, &tags, &e.Content, &e.Sig); err != nil {
			return nil, 0, err
		}
		if err := json.Unmarshal(tags, &e.Tags); err != nil {
			return nil, 0, fmt.Errorf("event %s: tags: %w", e.ID, err)
		}
		bytes += len(e.Content) + len(tags)
		evs = append(evs, &e)
	}
	return evs, bytes, rows.Err()
}
