package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// pgChanMark carries CaughtUp's markers: a marker notified after a change
// committed reaches this instance's LISTEN connection after that change's
// own notification (PostgreSQL delivers notifications in commit order), so
// once Follow has handled everything before the marker, this instance has
// followed every change committed before CaughtUp was called.
const pgChanMark = "grasp_mark"

// pgCaughtUpBound is how long, on the store's clock, CaughtUp waits for its
// marker: longer than a LISTEN reconnect (pgReconnectMax) with its
// catch-up, after which the caller goes on with what this instance knows.
const pgCaughtUpBound = 30 * time.Second

// pgMarks are the markers this instance's CaughtUp calls wait for.
type pgMarks struct {
	mu        sync.Mutex
	following bool   // a Follow runs: markers are heard
	prefix    string // this instance's, random: other instances' markers never match
	n         uint64
	waiting   map[string]chan struct{}
}

func newPGMarks() *pgMarks {
	b := make([]byte, 8)
	rand.Read(b) //nolint:errcheck // crypto/rand never fails (Go 1.24+)
	return &pgMarks{prefix: hex.EncodeToString(b), waiting: map[string]chan struct{}{}}
}

// add registers a new marker; ok is false when no Follow runs (nothing to
// wait for: nothing is followed).
func (m *pgMarks) add() (token string, ch chan struct{}, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.following {
		return "", nil, false
	}
	m.n++
	token = fmt.Sprintf("%s-%d", m.prefix, m.n)
	ch = make(chan struct{})
	m.waiting[token] = ch
	return token, ch, true
}

// seen releases the waiters of tokens (markers of other instances, and
// ones already released or given up, are not there).
func (m *pgMarks) seen(tokens ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range tokens {
		if ch, ok := m.waiting[t]; ok {
			close(ch)
			delete(m.waiting, t)
		}
	}
}

// drop forgets a marker its caller no longer waits for.
func (m *pgMarks) drop(token string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waiting, token)
}

// pending is every marker waited for now.
func (m *pgMarks) pending() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.waiting))
	for t := range m.waiting {
		out = append(out, t)
	}
	return out
}

// follow marks whether a Follow runs; when it stops, every waiter is
// released: nothing more will be followed for it to wait for.
func (m *pgMarks) follow(on bool) {
	m.mu.Lock()
	m.following = on
	m.mu.Unlock()
	if !on {
		m.seen(m.pending()...)
	}
}

// caughtUp notifies a marker of its own and waits until Follow has handled
// every notification before it (CaughtUp).
func (s *pgStore) caughtUp(ctx context.Context) error {
	token, ch, ok := s.marks.add()
	if !ok {
		return nil
	}
	defer s.marks.drop(token)
	if _, err := s.pgDB().ExecContext(ctx, `SELECT pg_notify($1, $2)`, pgChanMark, token); err != nil {
		return fmt.Errorf("store: notify a catch-up marker: %w", err)
	}
	bound := s.env.Clock.NewTimer(pgCaughtUpBound)
	defer bound.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-bound.C():
		return fmt.Errorf("store: the changes of the other instances were not followed within %v", pgCaughtUpBound)
	}
}
