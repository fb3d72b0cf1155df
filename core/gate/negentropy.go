package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/negguard"
	"github.com/grasp-dev/grasp/core/negindex"
	"github.com/grasp-dev/grasp/core/nip34"
)

// The NIP-77 server. khatru v0.19.1 has one, but it answers errors with
// NEG-ERROR instead of NEG-ERR, replies before it stores the session (a
// client answering at once finds no session), and neither bounds the events
// a session covers nor the sessions open; so grasp serves NIP-77 here, on
// negindex's engine (go-nostr's for a set that is no negindex.Snapshot).

// negSession is one NIP-77 reconciliation, keyed by subscription id within
// its connection. Only the client reader touches neg; the idle timer only
// removes the session from the map.
type negSession struct {
	neg      negindex.Reconciler
	timer    clock.Timer
	lastUsed time.Time // under conn.negMu
	// filters are what it reconciles, seen the private events its set
	// holds (GRASP-08): what a revocation of the key re-checks.
	filters []nostr.Filter
	seen    *privateSeen
}

// negDone is the whole reply when the server has nothing more to say: the
// protocol version byte and no ranges.
const negDone = "61"

var (
	errTooManyEvents = errors.New("too many events")
	// errOpenTooLong: the set was not built within negentropy_open_timeout.
	errOpenTooLong = errors.New("building the set took too long")
)

func (c *conn) handleNeg(f *frame, b []byte) (alive bool) {
	subid, ok := f.stringAt(b, 1)
	if !ok || subid == "" {
		c.g.metrics.negErrors.Inc()
		return c.notice("invalid: " + string(f.label) + " needs a non-empty subscription id string")
	}
	if r := c.checkSubID(subid); r != "" {
		return c.negErr(subid, r)
	}
	// A NIP-77 client waits for NEG-MSG or NEG-ERR on its id; after a
	// panic the reader goes on (alive stays true).
	alive = true
	defer c.recovered(string(f.label), func(reason string) { c.dropNegSession(subid); c.negErr(subid, reason) })
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
	filters, err := parseNegFilters(b[f.elems[2].start:f.elems[2].end])
	if err != nil {
		return c.negErr(subid, "invalid: "+err.Error())
	}
	if len(filters) > c.g.lim.MaxFiltersPerReq {
		c.g.metrics.limit("filters")
		return c.negErr(subid, fmt.Sprintf("blocked: too many filters in one NEG-OPEN (%d), the limit is %d", len(filters), c.g.lim.MaxFiltersPerReq))
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
	for i := range filters {
		if r := c.checkFilter(&filters[i]); r != "" {
			return c.negErr(subid, r)
		}
	}
	// GRASP-08 holds for every filter of a union: one the connection may
	// not read refuses the session, as it refuses a REQ.
	if r := c.privateRefusal(filters...); r != "" {
		return c.negErr(subid, r)
	}
	filters = slices.DeleteFunc(filters, func(f nostr.Filter) bool { return f.LimitZero })
	if len(filters) == 0 {
		return c.negErr(subid, "invalid: a filter with limit 0 matches nothing to reconcile")
	}
	// Reserve a relay-wide slot before the vector is built; it is given
	// back unless the session stays open (then its end gives it back).
	if c.g.negOpen.Add(1) > int64(c.g.lim.NegentropyMaxSessions) {
		c.g.negOpen.Add(-1)
		c.g.metrics.limit("neg_sessions_total")
		return c.negErr(subid, "blocked: too many negentropy sessions on this relay right now; try again later")
	}
	// and one of this client address's, so one client cannot hold the
	// relay-wide slots over many connections (F07)
	if !c.g.negReserveIP(c.remote) {
		c.g.negOpen.Add(-1)
		c.g.metrics.limit("neg_sessions_ip")
		return c.negErr(subid, fmt.Sprintf("blocked: too many negentropy sessions from your address (limit %d); close one or try again later", c.g.lim.NegentropySessionsPerIP))
	}
	kept := false
	defer func() {
		if !kept {
			c.g.negEnding(c.remote)
		}
	}()
	seen := &privateSeen{}
	vec, err := c.negSet(filters, seen)
	switch {
	case errors.Is(err, errTooManyEvents), errors.Is(err, negindex.ErrTooMany):
		c.g.metrics.limit("neg_events")
		return c.negErr(subid, fmt.Sprintf("blocked: filter matches more than %d events; sync narrower filters", c.g.lim.NegentropyMaxEvents))
	case errors.Is(err, errOpenTooLong):
		c.g.metrics.limit("neg_open_timeout")
		c.g.log.Warn("negentropy set took too long", "remote", c.peer, "filters", fmt.Sprint(filters),
			"negentropy_open_timeout", c.g.lim.NegentropyOpenTimeout.D().String())
		return c.negErr(subid, fmt.Sprintf("blocked: building the set of this NEG-OPEN took longer than %s; sync narrower filters (since/until, kinds, #a)",
			c.g.lim.NegentropyOpenTimeout.D()))
	case err != nil:
		c.g.log.Error("negentropy query failed", "remote", c.peer, "filters", fmt.Sprint(filters), "error", err)
		return c.negErr(subid, "error: could not query the store")
	}
	neg, err := negindex.NewReconciler(vec, c.g.lim.NegentropyFrameBytes)
	if err != nil {
		return c.negErr(subid, "error: "+err.Error())
	}
	s := &negSession{neg: neg, filters: filters, seen: seen}
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

// reconcile runs the session's engine, turning a panic on input that passed
// negguard.Check into an error rather than a crashed process (negindex's
// Engine errs instead of panicking; go-nostr's, for sets that are no
// Snapshot, may not).
func reconcile(neg negindex.Reconciler, msg string) (out string, err error) {
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
	c.g.negEnded(c.remote)
	c.negErr(subid, "closed: negentropy session idle for too long")
}

func (c *conn) dropNegSession(subid string) {
	c.negMu.Lock()
	s := c.neg[subid]
	delete(c.neg, subid)
	c.negMu.Unlock()
	if s != nil {
		s.timer.Stop()
		c.g.negEnded(c.remote)
	}
}

func (c *conn) closeNegSessions() {
	c.negMu.Lock()
	sessions := c.neg
	c.neg = make(map[string]*negSession)
	c.negMu.Unlock()
	for _, s := range sessions {
		s.timer.Stop()
		c.g.negEnded(c.remote)
	}
}

// negReserveIP counts a session of ip against negentropy_sessions_per_ip.
func (g *Gate) negReserveIP(ip string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.negPerIP[ip] >= g.lim.NegentropySessionsPerIP {
		return false
	}
	g.negPerIP[ip]++
	return true
}

// negEnding gives back a session's relay-wide and per-address slots.
func (g *Gate) negEnding(ip string) {
	g.negOpen.Add(-1)
	g.mu.Lock()
	if g.negPerIP[ip]--; g.negPerIP[ip] <= 0 {
		delete(g.negPerIP, ip)
	}
	g.mu.Unlock()
}

// negEnded gives back the slots of a session that was open.
func (g *Gate) negEnded(ip string) {
	g.negEnding(ip)
	g.metrics.negSessions.Dec()
}

func (c *conn) negErr(subid, reason string) bool {
	c.g.metrics.negErrors.Inc()
	return c.send(appendEnvelope(nil, "NEG-ERR", subid, reason))
}

// parseNegFilters decodes the NEG-OPEN filter: one object (NIP-77), or an
// array of them, which NDK's NIP-77 client sends (several filters) and
// which then means their union (issue 10 part 4: on a NEG-ERR NDK marks
// the relay as not speaking NIP-77 for an hour).
func parseNegFilters(raw []byte) ([]nostr.Filter, error) {
	list := []json.RawMessage{raw}
	if raw[0] == '[' {
		list = nil
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
		if len(list) == 0 {
			return nil, errors.New("NEG-OPEN needs at least one filter")
		}
	}
	filters := make([]nostr.Filter, len(list))
	for i, raw := range list {
		if len(raw) == 0 || raw[0] != '{' {
			return nil, errors.New("filter must be a JSON object")
		}
		if err := filters[i].UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("filter: %w", err)
		}
	}
	return filters, nil
}

// negSet builds the set a session reconciles (negStorageOf) within
// negentropy_open_timeout, on the fake clock in tests. The connection's
// reader builds it, held by the server (serverHolds: its client's silence
// meanwhile does not count against client_timeout); the bound keeps the
// hold finite, and its end is a NEG-ERR.
func (c *conn) negSet(filters []nostr.Filter, seen *privateSeen) (negentropy.Storage, error) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	var late atomic.Bool
	t := c.g.clk.AfterFunc(c.g.lim.NegentropyOpenTimeout.D(), func() {
		late.Store(true)
		cancel()
	})
	defer t.Stop()
	defer c.serverHolds()()
	st, err := c.negStorageOf(ctx, filters, seen)
	if err != nil && late.Load() {
		return nil, errOpenTooLong
	}
	return st, err
}

// negStorageOf is the set a session reconciles: one filter's, or the union
// of several filters' sets. Each filter's set is built on its own, as for a
// session of that filter alone (negStorage: the index only when the
// connection may see everything that filter matches), so GRASP-08 holds
// for each; the union keeps each id once and is bounded by
// NegentropyMaxEvents like one filter's set.
func (c *conn) negStorageOf(ctx context.Context, filters []nostr.Filter, private *privateSeen) (negentropy.Storage, error) {
	if len(filters) == 1 {
		return c.negStorage(ctx, filters[0], private)
	}
	union := negindex.NewSnapshotBuilder(0)
	seen := make(map[string]struct{})
	for _, f := range filters {
		st, err := c.negStorage(ctx, f, private)
		if err != nil {
			return nil, err
		}
		for _, it := range st.Range(0, st.Size()) {
			if _, dup := seen[it.ID]; dup {
				continue
			}
			if len(seen) >= c.g.lim.NegentropyMaxEvents {
				return nil, errTooManyEvents
			}
			seen[it.ID] = struct{}{}
			union.Add(it.Timestamp, it.ID)
		}
	}
	return union.Snapshot(), nil
}

// NegentropyStorer is implemented by a Backend whose store hands over the
// (created_at, id) pairs of the events a filter matches without decoding
// the events: badger keeps them in memory (core/negindex), a session then
// costs a walk over them (issue 15 part 1); PostgreSQL reads the pairs
// alone in one query (issue 27). ok false means the filter is not covered;
// the session then queries. ctx bounds the work and names the client
// (clientip).
type NegentropyStorer interface {
	NegentropyStorage(ctx context.Context, f nostr.Filter, max int) (st negentropy.Storage, ok bool, err error)
}

// negStorage is the session's set: from the backend's index when it
// answers and nothing the filter matches can be hidden from this connection
// (GRASP-08: the index knows ids, not readers), else from a query that
// leaves out what the connection may not read.
func (c *conn) negStorage(ctx context.Context, filter nostr.Filter, seen *privateSeen) (negentropy.Storage, error) {
	if ns, ok := c.g.backend.(NegentropyStorer); ok && c.onlyListsHidden() {
		st, answered, err := ns.NegentropyStorage(c.asked(ctx), filter, c.g.lim.NegentropyMaxEvents)
		if answered {
			if err != nil || c.seesAll(filter) {
				return st, err
			}
			return c.withoutHiddenLists(ctx, filter, st)
		}
	}
	return c.buildSet(ctx, filter, seen)
}

// onlyListsHidden reports whether nothing but kind-10318 lists and events
// withheld by moderation or a ban can be hidden from this connection (no
// repository is private). The index then still answers a filter that may
// match them, such as the empty filter every whole-store sync sends, and
// only those are checked one by one (withoutHiddenLists): asking the store
// for every event instead costs a decode of the whole store per session
// (audit F07).
func (c *conn) onlyListsHidden() bool {
	p := c.g.opts.Private
	return p == nil || !p.Restricting()
}

// withoutHiddenLists is st minus what filter matches that this connection
// may not read though no repository is private: kind-10318 lists and the
// events withheld by moderation or an operator's ban (withheldOut). The
// lists are few (one replaceable event per author) and so are the withheld
// events, so they are queried and checked; st is kept as it is when none
// is hidden.
func (c *conn) withoutHiddenLists(ctx context.Context, filter nostr.Filter, st negentropy.Storage) (negentropy.Storage, error) {
	hidden, err := c.withheldOut(ctx, filter)
	if err != nil {
		return nil, err
	}
	if hidden == nil {
		hidden = make(map[string]struct{})
	}
	if mayMatchKind(filter, privateListKind) {
		lists := filter.Clone()
		lists.Kinds = []int{privateListKind}
		ch, err := c.g.backend.Query(c.asked(ctx), lists)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", lists, err)
		}
		for evt := range ch {
			if !c.visible(ctx, evt) {
				hidden[evt.ID] = struct{}{}
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("query %s: %w", lists, err)
		}
	}
	if len(hidden) == 0 {
		return st, nil
	}
	set := negindex.NewSnapshotBuilder(st.Size())
	for _, it := range st.Range(0, st.Size()) {
		if _, skip := hidden[it.ID]; !skip {
			set.Add(it.Timestamp, it.ID)
		}
	}
	return set.Snapshot(), nil
}

// buildSet loads the ids the filter matches into a negindex Snapshot (go-nostr's
// vector re-adds every id of a range per fingerprint: on a backend without
// an index, PostgreSQL, a 1 % missing session over 200,000 events ran past
// the client's patience; issue 27 part 3), refusing filters that match
// more than NegentropyMaxEvents before holding them all in memory.
func (c *conn) buildSet(ctx context.Context, filter nostr.Filter, seen *privateSeen) (*negindex.Snapshot, error) {
	ctx, cancel := context.WithCancel(eventstore.SetNegentropy(ctx))
	defer cancel()
	ch, err := c.queryNoting(ctx, filter, seen)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", filter, err)
	}
	if ch == nil {
		return nil, fmt.Errorf("query %s: no result channel", filter)
	}
	set := negindex.NewSnapshotBuilder(0)
	n := 0
	for {
		var (
			evt  *nostr.Event
			more bool
		)
		select {
		case evt, more = <-ch:
		case <-ctx.Done(): // past negentropy_open_timeout, or the connection ended
			drain(ch)
			return nil, fmt.Errorf("query %s: %w", filter, ctx.Err())
		}
		if !more {
			break // every event was read
		}
		if !nip34.IsHex64(evt.ID) {
			continue // a store should never hold a malformed id; the set leaves it out
		}
		n++
		if n > c.g.lim.NegentropyMaxEvents {
			cancel()
			drain(ch) // let the store's producer finish
			return nil, errTooManyEvents
		}
		set.Add(evt.CreatedAt, evt.ID)
	}
	if err := ctx.Err(); err != nil {
		// a store may close its channel early when ctx ends
		return nil, fmt.Errorf("query %s: %w", filter, err)
	}
	return set.Snapshot(), nil
}
