package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/negguard"
	"github.com/grasp-dev/grasp/core/negindex"
	"github.com/grasp-dev/grasp/core/nip34"
)

// The NIP-77 server. khatru v0.19.1 has one, but it answers errors with
// NEG-ERROR instead of NEG-ERR, replies before it stores the session (a
// client answering at once finds no session), and neither bounds the events
// a session covers nor the sessions open; so grasp serves NIP-77 here, on
// go-nostr's engine.

// negSession is one NIP-77 reconciliation, keyed by subscription id within
// its connection. Only the client reader touches neg; the idle timer only
// removes the session from the map.
type negSession struct {
	neg      *negentropy.Negentropy
	timer    clock.Timer
	lastUsed time.Time // under conn.negMu
}

// negDone is the whole reply when the server has nothing more to say: the
// protocol version byte and no ranges.
const negDone = "61"

var errTooManyEvents = errors.New("too many events")

func (c *conn) handleNeg(f *frame, b []byte) bool {
	subid, ok := f.stringAt(b, 1)
	if !ok || subid == "" {
		c.g.metrics.negErrors.Inc()
		return c.notice("invalid: " + string(f.label) + " needs a non-empty subscription id string")
	}
	if r := c.checkSubID(subid); r != "" {
		return c.negErr(subid, r)
	}
	switch string(f.label) {
	case "NEG-OPEN":
		return c.negOpen(f, b, subid)
	case "NEG-MSG":
		return c.negMsg(f, b, subid)
	default: // NEG-CLOSE: no reply, also for sessions that already ended
		c.dropNegSession(subid)
		return true
	}
}

func (c *conn) negOpen(f *frame, b []byte, subid string) bool {
	// NIP-77: a NEG-OPEN on an open id replaces that session.
	c.dropNegSession(subid)
	if f.n != 4 {
		return c.negErr(subid, "invalid: NEG-OPEN takes a subscription id, a filter and a message")
	}
	filter, err := parseNegFilter(b[f.elems[2].start:f.elems[2].end])
	if err != nil {
		return c.negErr(subid, "invalid: "+err.Error())
	}
	raw, ok := f.stringAt(b, 3)
	if !ok {
		return c.negErr(subid, "invalid: negentropy message must be a hex string")
	}
	msg, err := negguard.Check(raw)
	if err != nil {
		return c.negErr(subid, "invalid: negentropy message: "+err.Error())
	}
	c.negMu.Lock()
	open := len(c.neg)
	c.negMu.Unlock()
	if open >= c.g.lim.NegentropySessionsPerConn {
		c.g.metrics.limit("neg_sessions")
		return c.negErr(subid, fmt.Sprintf("blocked: too many negentropy sessions on this connection, the limit is %d", c.g.lim.NegentropySessionsPerConn))
	}
	if r := c.checkFilter(&filter); r != "" {
		return c.negErr(subid, r)
	}
	if r := c.privateRefusal(filter); r != "" {
		return c.negErr(subid, r)
	}
	if filter.LimitZero {
		return c.negErr(subid, "invalid: a filter with limit 0 matches nothing to reconcile")
	}
	// Reserve a relay-wide slot before the vector is built; it is given
	// back unless the session stays open (then its end gives it back).
	if c.g.negOpen.Add(1) > int64(c.g.lim.NegentropyMaxSessions) {
		c.g.negOpen.Add(-1)
		c.g.metrics.limit("neg_sessions_total")
		return c.negErr(subid, "blocked: too many negentropy sessions on this relay right now; try again later")
	}
	kept := false
	defer func() {
		if !kept {
			c.g.negOpen.Add(-1)
		}
	}()
	vec, err := c.negStorage(filter)
	switch {
	case errors.Is(err, errTooManyEvents), errors.Is(err, negindex.ErrTooMany):
		c.g.metrics.limit("neg_events")
		return c.negErr(subid, fmt.Sprintf("blocked: filter matches more than %d events; sync narrower filters", c.g.lim.NegentropyMaxEvents))
	case err != nil:
		c.g.log.Error("negentropy query failed", "remote", c.peer, "filter", filter.String(), "error", err)
		return c.negErr(subid, "error: could not query the store")
	}
	s := &negSession{neg: negentropy.New(vec, c.g.lim.NegentropyFrameBytes)}
	out, err := reconcile(s.neg, msg)
	if err != nil {
		return c.negErr(subid, "invalid: negentropy message: "+err.Error())
	}
	c.g.metrics.negTotal.Inc()
	if out != negDone {
		// Stored before the reply is queued: the client cannot answer a
		// session that does not exist yet (khatru's race).
		s.timer = c.g.clk.AfterFunc(c.g.lim.NegentropyIdleTimeout.D(), func() { c.negIdle(subid, s) })
		c.negMu.Lock()
		s.lastUsed = c.g.clk.Now()
		c.neg[subid] = s
		c.negMu.Unlock()
		kept = true
		c.g.metrics.negSessions.Inc()
	}
	return c.send(appendEnvelope(nil, "NEG-MSG", subid, out))
}

func (c *conn) negMsg(f *frame, b []byte, subid string) bool {
	c.negMu.Lock()
	s := c.neg[subid]
	if s != nil {
		s.lastUsed = c.g.clk.Now()
	}
	c.negMu.Unlock()
	if s == nil {
		return c.negErr(subid, "invalid: no open negentropy session with this id")
	}
	if f.n != 3 {
		c.dropNegSession(subid)
		return c.negErr(subid, "invalid: NEG-MSG takes a subscription id and a message")
	}
	raw, ok := f.stringAt(b, 2)
	if !ok {
		c.dropNegSession(subid)
		return c.negErr(subid, "invalid: negentropy message must be a hex string")
	}
	msg, err := negguard.Check(raw)
	if err != nil {
		c.dropNegSession(subid)
		return c.negErr(subid, "invalid: negentropy message: "+err.Error())
	}
	out, err := reconcile(s.neg, msg)
	if err != nil {
		c.dropNegSession(subid)
		return c.negErr(subid, "invalid: negentropy message: "+err.Error())
	}
	if out == negDone {
		c.dropNegSession(subid)
	}
	return c.send(appendEnvelope(nil, "NEG-MSG", subid, out))
}

// reconcile runs go-nostr's engine, turning a panic on input that passed
// negguard.Check into an error rather than a crashed process.
func reconcile(neg *negentropy.Negentropy, msg string) (out string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("reconcile: %v", p)
		}
	}()
	return neg.Reconcile(msg)
}

// negIdle is the idle timer: it ends a session that saw no NEG-MSG for
// NegentropyIdle, or re-arms for the remainder if one arrived meanwhile.
func (c *conn) negIdle(subid string, s *negSession) {
	c.negMu.Lock()
	if c.neg[subid] != s {
		c.negMu.Unlock()
		return
	}
	if idle := c.g.clk.Since(s.lastUsed); idle < c.g.lim.NegentropyIdleTimeout.D() {
		s.timer.Reset(c.g.lim.NegentropyIdleTimeout.D() - idle)
		c.negMu.Unlock()
		return
	}
	delete(c.neg, subid)
	c.negMu.Unlock()
	c.g.negEnded()
	c.negErr(subid, "closed: negentropy session idle for too long")
}

func (c *conn) dropNegSession(subid string) {
	c.negMu.Lock()
	s := c.neg[subid]
	delete(c.neg, subid)
	c.negMu.Unlock()
	if s != nil {
		s.timer.Stop()
		c.g.negEnded()
	}
}

func (c *conn) closeNegSessions() {
	c.negMu.Lock()
	sessions := c.neg
	c.neg = make(map[string]*negSession)
	c.negMu.Unlock()
	for _, s := range sessions {
		s.timer.Stop()
		c.g.negEnded()
	}
}

// negEnded gives back the relay-wide slot of a session that was open.
func (g *Gate) negEnded() {
	g.negOpen.Add(-1)
	g.metrics.negSessions.Dec()
}

func (c *conn) negErr(subid, reason string) bool {
	c.g.metrics.negErrors.Inc()
	return c.send(appendEnvelope(nil, "NEG-ERR", subid, reason))
}

// parseNegFilter decodes the NEG-OPEN filter. NDK sends it wrapped in a
// one-element array; that is accepted too.
func parseNegFilter(raw []byte) (nostr.Filter, error) {
	var filter nostr.Filter
	if raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return filter, fmt.Errorf("filter: %w", err)
		}
		if len(list) != 1 {
			return filter, errors.New("NEG-OPEN takes exactly one filter")
		}
		raw = list[0]
	}
	if len(raw) == 0 || raw[0] != '{' {
		return filter, errors.New("filter must be a JSON object")
	}
	if err := filter.UnmarshalJSON(raw); err != nil {
		return filter, fmt.Errorf("filter: %w", err)
	}
	return filter, nil
}

// NegentropyStorer is implemented by a Backend whose store keeps the
// (created_at, id) pairs of its events in memory (core/negindex): a session
// then costs a walk over them instead of a query decoding every event
// (issue 15 part 1). ok false means the filter is not covered; the session
// then queries.
type NegentropyStorer interface {
	NegentropyStorage(f nostr.Filter, max int) (st negentropy.Storage, ok bool, err error)
}

// negStorage is the session's set: from the backend's index when it
// answers and nothing the filter matches can be hidden from this connection
// (GRASP-08: the index knows ids, not readers), else from a query that
// leaves out what the connection may not read.
func (c *conn) negStorage(filter nostr.Filter) (negentropy.Storage, error) {
	if ns, ok := c.g.backend.(NegentropyStorer); ok && c.seesAll(filter) {
		st, answered, err := ns.NegentropyStorage(filter, c.g.lim.NegentropyMaxEvents)
		if answered {
			return st, err
		}
	}
	return c.buildVector(filter)
}

// buildVector loads the ids the filter matches, refusing filters that match
// more than NegentropyMaxEvents before holding them all in memory.
func (c *conn) buildVector(filter nostr.Filter) (*vector.Vector, error) {
	ctx, cancel := context.WithCancel(eventstore.SetNegentropy(c.ctx))
	defer cancel()
	ch, err := c.query(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", filter, err)
	}
	if ch == nil {
		return nil, fmt.Errorf("query %s: no result channel", filter)
	}
	vec := vector.New()
	n := 0
	for evt := range ch {
		if !nip34.IsHex64(evt.ID) {
			continue // the vector panics on malformed ids; a store should never hold one
		}
		n++
		if n > c.g.lim.NegentropyMaxEvents {
			cancel()
			go func() {
				for range ch { // let the store's producer finish
				}
			}()
			return nil, errTooManyEvents
		}
		vec.Insert(evt.CreatedAt, evt.ID)
	}
	vec.Seal()
	return vec, nil
}
