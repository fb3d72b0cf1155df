package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
)

// pgMaxBatch bounds the rows one INSERT carries: 7 parameters each, far
// below PostgreSQL's 65,535 per statement, and a statement small enough
// that a batch's latency stays that of a few single inserts.
const pgMaxBatch = 256

// pgGroup is the postgres backend's group commit (issue 27 part 1). Each
// SaveEvent on its own was one INSERT, one transaction and one WAL flush,
// and so was each privacy record: at a relay's concurrency the server
// spent its CPU and its disk on commits, each one rewriting the WAL's last
// page and waiting for its fdatasync. Here the writes waiting while a batch
// commits go together in the next one: one multi-row INSERT, which is one
// statement and so one transaction and one WAL flush, and every caller is
// answered after the commit that holds its write, so an OK still means
// committed. No goroutine of its own: the first caller to find no batch
// running runs the batches (the leader) until nobody waits, as badger's
// write path does. A write waiting alone goes alone, as before.
type pgGroup struct {
	mu      sync.Mutex
	queue   []*pgInsert
	leading bool
}

// pgInsert is one caller's write: an event, or a privacy record (id, val).
type pgInsert struct {
	evt  *nostr.Event
	id   string
	val  []byte
	done chan error // buffered: the leader never blocks on an answer
}

// do queues req, runs batches with run if no leader is running them, and
// returns req's result once the transaction holding it committed. A caller
// whose ctx ends first gets ctx's error (never an OK); its write may still
// be committed, as with any statement cut short.
func (p *pgGroup) do(ctx context.Context, req *pgInsert, run func(context.Context, []*pgInsert)) error {
	req.done = make(chan error, 1)
	p.mu.Lock()
	p.queue = append(p.queue, req)
	if p.leading {
		p.mu.Unlock()
		select {
		case err := <-req.done:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.leading = true
	p.mu.Unlock()
	// The batches are the other callers' too: the leader's own ctx ending
	// must not cut them short.
	p.lead(context.WithoutCancel(ctx), run, req)
	return <-req.done
}

// lead runs the queued batches until the queue is empty. A caller leading
// stops once its own write is answered and hands what is still queued to a
// goroutine of its own: under a steady stream of writes the queue never
// empties, and a leader that served it to the end would never return its
// own OK.
func (p *pgGroup) lead(ctx context.Context, run func(context.Context, []*pgInsert), own *pgInsert) {
	for {
		p.mu.Lock()
		n := min(len(p.queue), pgMaxBatch)
		if n == 0 {
			p.leading = false
			p.mu.Unlock()
			return
		}
		batch := p.queue[:n:n]
		p.queue = p.queue[n:]
		if len(p.queue) == 0 {
			p.queue = nil // let the old array go
		}
		p.mu.Unlock()
		run(ctx, batch)
		if own != nil && slices.Contains(batch, own) {
			p.mu.Lock()
			if len(p.queue) == 0 {
				p.leading = false
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			// still leading (p.leading stays true): the rest is the
			// handed-over goroutine's
			go p.lead(ctx, run, nil)
			return
		}
	}
}

// saveEvent stores evt with the events waiting beside it: nil when it
// inserted evt, eventstore.ErrDupEvent when the id was already stored, or
// the error.
func (s *pgStore) saveEvent(ctx context.Context, evt *nostr.Event) error {
	return s.inserts.do(ctx, &pgInsert{evt: evt}, s.insertBatch)
}

// insertBatch inserts the batch in one statement and answers each request.
// Should the statement fail, each event is tried alone, so that one bad
// event fails only its own caller.
func (s *pgStore) insertBatch(ctx context.Context, batch []*pgInsert) {
	// An id twice in the batch: the first request inserts, the others are
	// duplicates once it has.
	seen := make(map[string]bool, len(batch))
	var rows, repeats []*pgInsert
	for _, r := range batch {
		if seen[r.evt.ID] {
			repeats = append(repeats, r)
			continue
		}
		seen[r.evt.ID] = true
		rows = append(rows, r)
	}
	s.m.batchOps.Observe(float64(len(batch)))
	result := make(map[string]error, len(rows))
	inserted, err := s.insertEvents(ctx, rows)
	for _, r := range rows {
		if err != nil && len(rows) > 1 {
			one, err := s.insertEvents(ctx, []*pgInsert{r})
			result[r.evt.ID] = insertResult(one, r.evt.ID, err)
		} else {
			result[r.evt.ID] = insertResult(inserted, r.evt.ID, err)
		}
		r.done <- result[r.evt.ID]
	}
	for _, r := range repeats {
		// a later caller with the same id learns what a separate
		// insert after the first would have told it
		if err := result[r.evt.ID]; err != nil && err != eventstore.ErrDupEvent {
			r.done <- err
		} else {
			r.done <- eventstore.ErrDupEvent
		}
	}
}

func insertResult(inserted map[string]bool, id string, err error) error {
	switch {
	case err != nil:
		return err
	case inserted[id]:
		return nil
	default:
		return eventstore.ErrDupEvent
	}
}

// insertEvents runs one INSERT of rows, as the eventstore library's
// SaveEvent writes one (same columns, same JSON of the tags), and returns
// the ids it inserted: the others were stored already.
func (s *pgStore) insertEvents(ctx context.Context, rows []*pgInsert) (map[string]bool, error) {
	var q strings.Builder
	q.WriteString(`INSERT INTO event (id, pubkey, created_at, kind, tags, content, sig) VALUES `)
	args := make([]any, 0, 7*len(rows))
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteByte('(')
		for k := range 7 {
			if k > 0 {
				q.WriteByte(',')
			}
			q.WriteByte('$')
			q.WriteString(strconv.Itoa(7*i + k + 1))
		}
		q.WriteByte(')')
		tags, err := json.Marshal(r.evt.Tags)
		if err != nil {
			return nil, err
		}
		args = append(args, r.evt.ID, r.evt.PubKey, r.evt.CreatedAt, r.evt.Kind, tags, r.evt.Content, r.evt.Sig)
	}
	q.WriteString(` ON CONFLICT (id) DO NOTHING RETURNING id`)
	res, err := s.pgDB().QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	inserted := make(map[string]bool, len(rows))
	for res.Next() {
		var id string
		if err := res.Scan(&id); err != nil {
			return nil, err
		}
		inserted[id] = true
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	return inserted, nil
}

// putPrivacyBatch writes the batch's privacy records in one statement
// and answers each request; a record put twice keeps the later value, as
// two puts in turn would. Should the statement fail, each record is tried
// alone.
func (s *pgStore) putPrivacyBatch(ctx context.Context, batch []*pgInsert) {
	// ON CONFLICT DO UPDATE refuses a row twice in one statement: one row
	// per id, its last value
	last := make(map[string]int, len(batch))
	var ids []string
	for i, r := range batch {
		if _, ok := last[r.id]; !ok {
			ids = append(ids, r.id)
		}
		last[r.id] = i
	}
	rows := make([]*pgInsert, 0, len(ids))
	for _, id := range ids {
		rows = append(rows, batch[last[id]])
	}
	result := make(map[string]error, len(rows))
	err := s.putPrivacyRows(ctx, rows)
	for _, r := range rows {
		if err != nil && len(rows) > 1 {
			result[r.id] = s.putPrivacyRows(ctx, []*pgInsert{r})
		} else {
			result[r.id] = err
		}
	}
	for _, r := range batch {
		r.done <- result[r.id]
	}
}

func (s *pgStore) putPrivacyRows(ctx context.Context, rows []*pgInsert) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO grasp_privacy_event (id, val) VALUES `)
	args := make([]any, 0, 2*len(rows))
	for i, r := range rows {
		if i > 0 {
			q.WriteByte(',')
		}
		fmt.Fprintf(&q, "($%d,$%d)", 2*i+1, 2*i+2)
		args = append(args, r.id, r.val)
	}
	q.WriteString(` ON CONFLICT (id) DO UPDATE SET val = EXCLUDED.val`)
	_, err := s.pgDB().ExecContext(ctx, q.String(), args...)
	return err
}
