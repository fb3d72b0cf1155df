package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"
	"github.com/nbd-wtf/go-nostr"
)

// LISTEN/NOTIFY channels of the postgres backend. Triggers (pg_schema.go)
// notify at commit, in the writing transaction, whichever instance wrote.
const (
	pgChanEvents = "grasp_events" // payload: the id of an inserted event
	pgChanSide   = "grasp_side"   // payload: "<bucket> <hex key>" of a changed entry
)

// Bounds of the fan-out: how many notified ids one load asks for, how far
// back a catch-up after a lost connection looks (a transaction may commit
// a little after its stored_at), the most events one catch-up delivers, and
// how many delivered ids are remembered to deliver each only once.
const (
	pgFeedBatch      = 256
	pgCatchUpSlack   = 5 * time.Second
	pgCatchUpMax     = 20000
	pgCatchUpPage    = 1000
	pgRememberIDs    = 1 << 16
	pgReconnectFirst = 100 * time.Millisecond
	pgReconnectMax   = 10 * time.Second
)

// shared is true: every grasp instance on the database writes it.
func (s *pgStore) shared() bool { return true }

// idRing remembers the last n ids: what this instance wrote (never
// delivered back to it) and what was delivered (never delivered twice).
type idRing struct {
	mu   sync.Mutex
	set  map[string]struct{}
	ring []string
	next int
}

func newIDRing(n int) *idRing {
	return &idRing{set: make(map[string]struct{}, n), ring: make([]string, n)}
}

func (r *idRing) contains(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.set[id]
	return ok
}

// add reports whether id was new.
func (r *idRing) add(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.set[id]; ok {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.set, old)
	}
	r.ring[r.next] = id
	r.next = (r.next + 1) % len(r.ring)
	r.set[id] = struct{}{}
	return true
}

// follow listens on one connection of its own (lib/pq's Listener, outside
// the pools) and delivers as Follow says.
func (s *pgStore) follow(ctx context.Context, f Follower) error {
	if f.Stored == nil {
		return errors.New("store: Follower.Stored is required")
	}
	l := pq.NewListener(s.opts.PostgresURL, pgReconnectFirst, pgReconnectMax, func(ev pq.ListenerEventType, err error) {
		if ev == pq.ListenerEventDisconnected || ev == pq.ListenerEventConnectionAttemptFailed {
			s.log.Warn("lost the postgres LISTEN connection; reconnecting", "error", err)
		}
	})
	defer l.Close()
	for _, ch := range []string{pgChanEvents, pgChanSide, pgChanMark} {
		if err := l.Listen(ch); err != nil {
			return fmt.Errorf("store: listen on %s: %w", ch, err)
		}
	}
	fd := &feed{s: s, f: f}
	// From here on a CaughtUp marker is heard.
	s.marks.follow(true)
	defer s.marks.follow(false)
	// What was stored before this instance listened is not news; catch-ups
	// start from here.
	if err := s.pgDB().QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&fd.last); err != nil {
		return fmt.Errorf("store: read the database clock: %w", err)
	}
	// A side-table change another instance wrote after this one loaded its
	// state at start-up but before the LISTEN above was heard by nobody (a
	// ban through A not honoured on a B just started): reload once now, as
	// after a reconnect. Anything later is notified.
	if f.Resync != nil {
		f.Resync()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case n, ok := <-l.Notify:
			if !ok {
				return errors.New("store: the LISTEN connection closed")
			}
			reconnected := n == nil
			if !reconnected {
				var ids, marks []string
				ids, marks, reconnected = fd.take(n, l.Notify)
				if len(ids) > 0 {
					if err := fd.load(ctx, ids); err != nil {
						s.log.Error("loading notified events", "count", len(ids), "error", err)
					}
				}
				// everything notified before these markers is handled
				s.marks.seen(marks...)
			}
			if reconnected { // notifications were lost
				fd.resync(ctx)
			}
		}
	}
}

type feed struct {
	s       *pgStore
	f       Follower
	last    time.Time // newest stored_at seen
	lastRow time.Time // stored_at of the last row scanned (catch-up paging)
}

// take handles n and whatever else is already queued, up to a batch: side
// changes are delivered at once, event ids returned for one load, and
// this instance's CaughtUp markers returned to be released after it. A
// nil notification (the connection was re-established) ends the batch:
// reconnected says so, and the caller catches up.
func (fd *feed) take(n *pq.Notification, more <-chan *pq.Notification) (ids, marks []string, reconnected bool) {
	handle := func(n *pq.Notification) {
		switch n.Channel {
		case pgChanEvents:
			if !fd.s.own.contains(n.Extra) {
				ids = append(ids, n.Extra)
			}
		case pgChanSide:
			if fd.f.SideChanged == nil {
				return
			}
			bucket, hk, ok := strings.Cut(n.Extra, " ")
			key, err := hex.DecodeString(hk)
			if ok && err == nil {
				fd.f.SideChanged(bucket, string(key))
			}
		case pgChanMark:
			marks = append(marks, n.Extra)
		}
	}
	handle(n)
	for len(ids) < pgFeedBatch {
		select {
		case n, ok := <-more:
			if !ok {
				return ids, marks, false
			}
			if n == nil {
				return ids, marks, true
			}
			handle(n)
		default:
			return ids, marks, false
		}
	}
	return ids, marks, false
}

// resync runs after the LISTEN connection was re-established: the events
// stored meanwhile are caught up, the side tables reloaded (Resync), and
// the CaughtUp calls waiting from before are released, their markers
// possibly lost with the connection but what they wait for now followed.
func (fd *feed) resync(ctx context.Context) {
	waiting := fd.s.marks.pending()
	if err := fd.catchUp(ctx); err != nil {
		fd.s.log.Error("catching up after reconnect", "error", err)
	}
	if fd.f.Resync != nil {
		fd.f.Resync()
	}
	fd.s.marks.seen(waiting...)
}

const pgEventColumns = `id, pubkey, created_at, kind, tags, content, sig, stored_at`

func (fd *feed) load(ctx context.Context, ids []string) error {
	rows, err := fd.s.pgDB().QueryContext(ctx, `SELECT `+pgEventColumns+` FROM event WHERE id = ANY($1)`, pq.Array(ids))
	if err != nil {
		return err
	}
	evs, err := fd.scan(rows)
	if err != nil {
		return err
	}
	// one query returns in no particular order: deliver in notification
	// (commit) order
	byID := make(map[string]*nostr.Event, len(evs))
	for _, e := range evs {
		byID[e.ID] = e
	}
	for _, id := range ids {
		if e := byID[id]; e != nil && fd.s.delivered.add(id) {
			fd.f.Stored(e)
		}
	}
	return nil
}

// catchUp delivers what was stored since the last event seen, less the
// slack, that was not delivered yet.
func (fd *feed) catchUp(ctx context.Context) error {
	from := fd.last.Add(-pgCatchUpSlack)
	after := ""
	sent := 0
	for sent < pgCatchUpMax {
		rows, err := fd.s.pgDB().QueryContext(ctx, `SELECT `+pgEventColumns+` FROM event
			WHERE (stored_at, id) > ($1, $2) ORDER BY stored_at, id LIMIT $3`, from, after, pgCatchUpPage)
		if err != nil {
			return err
		}
		evs, err := fd.scan(rows)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if !fd.s.own.contains(e.ID) && fd.s.delivered.add(e.ID) {
				fd.f.Stored(e)
				sent++
			}
		}
		if len(evs) < pgCatchUpPage {
			return nil
		}
		from, after = fd.lastRow, evs[len(evs)-1].ID
	}
	fd.s.log.Warn("catch-up after reconnect stopped at its bound; older events reach subscribers only by query", "delivered", sent)
	return nil
}

func (fd *feed) scan(rows *sql.Rows) ([]*nostr.Event, error) {
	defer rows.Close()
	var out []*nostr.Event
	for rows.Next() {
		var (
			e    nostr.Event
			tags []byte
			at   time.Time
		)
		if err := rows.Scan(&e.ID, &e.PubKey, &e.CreatedAt, &e.Kind, &tags, &e.Content, &e.Sig, &at); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(tags, &e.Tags); err != nil {
			return nil, fmt.Errorf("event %s: tags: %w", e.ID, err)
		}
		if at.After(fd.last) {
			fd.last = at
		}
		fd.lastRow = at
		out = append(out, &e)
	}
	return out, rows.Err()
}
