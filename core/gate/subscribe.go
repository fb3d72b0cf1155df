package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// subscription is one open REQ: its filters receive live events until
// CLOSE, a replacing REQ, or the end of the connection cancels it.
type subscription struct {
	filters []nostr.Filter
	cancel  context.CancelFunc
	// seen are the private events sent on it (GRASP-08): what a
	// revocation of the connection's key re-checks.
	seen privateSeen
	// filed is where the gate's subIndex holds the filters.
	filed []*subFilter
}

// The subscription and filter limits of REQ, COUNT and NEG-OPEN are checked
// here and nowhere else. Each check returns a NIP-01 prefixed reason, or "".

func (c *conn) checkSubID(subid string) string {
	switch {
	case subid == "":
		return "invalid: subscription id must not be empty"
	case len(subid) > c.g.lim.MaxSubIDLength:
		c.g.metrics.limit("subid_length")
		return fmt.Sprintf("invalid: subscription id longer than %d characters", c.g.lim.MaxSubIDLength)
	case !utf8.ValidString(subid):
		return "invalid: subscription id must be valid UTF-8"
	}
	return ""
}

// parseFilters decodes the filters of a REQ or COUNT (elements 2.. of the
// frame) after the count and shape checks. A refusal is a CLOSED reason;
// notice is set when the frame itself cannot be decoded.
func (c *conn) parseFilters(f *frame, b []byte) (filters []nostr.Filter, reason string, notice bool) {
	if nf := f.n - 2; nf > c.g.lim.MaxFiltersPerReq {
		c.g.metrics.limit("filters")
		return nil, fmt.Sprintf("blocked: too many filters in one request (%d), the limit is %d", nf, c.g.lim.MaxFiltersPerReq), false
	}
	for i := 2; i < f.n && i < maxSpans; i++ {
		if f.kindOf(b, i) != '{' {
			c.g.metrics.limit("malformed")
			return nil, "invalid: filters must be JSON objects", false
		}
	}
	// The frame keeps the spans of its first elements only: decode the
	// filter list as one array.
	var list []nostr.Filter
	start := f.elems[1].end
	for start < len(b) && b[start] != ',' {
		start++
	}
	raw := append([]byte{'['}, b[start+1:]...)
	if err := decodeFilters(raw, &list); err != nil {
		c.g.metrics.limit("malformed")
		return nil, "invalid: could not parse filters: " + err.Error(), true
	}
	for i := range list {
		if r := c.checkFilter(&list[i]); r != "" {
			return nil, r, false
		}
	}
	return list, "", false
}

// checkFilter refuses filters that are malformed or too expensive.
func (c *conn) checkFilter(f *nostr.Filter) string {
	l := c.g.lim
	if f.Search != "" {
		return "blocked: search (NIP-50) is not supported"
	}
	if f.Since != nil && f.Until != nil && *f.Since > *f.Until {
		return "invalid: since is after until"
	}
	if len(f.IDs) > l.MaxFilterItems || len(f.Authors) > l.MaxFilterItems || len(f.Kinds) > l.MaxFilterItems {
		c.g.metrics.limit("filter_items")
		return fmt.Sprintf("blocked: too many ids, authors or kinds in a filter (max %d)", l.MaxFilterItems)
	}
	for _, id := range f.IDs {
		if !nip34.IsHex64(id) {
			return "invalid: ids must be 64-character lowercase hex"
		}
	}
	for _, pk := range f.Authors {
		if !nip34.IsHex64(pk) {
			return "invalid: authors must be 64-character lowercase hex"
		}
	}
	for _, k := range f.Kinds {
		if k < 0 || k > 65535 {
			return "invalid: kinds must be between 0 and 65535"
		}
	}
	if len(f.Tags) > l.MaxTagsPerFilter {
		c.g.metrics.limit("filter_items")
		return fmt.Sprintf("blocked: too many tag filters (max %d)", l.MaxTagsPerFilter)
	}
	for key, values := range f.Tags {
		if len(key) != 1 {
			return "invalid: only single-letter tag filters are supported"
		}
		if len(values) > l.MaxFilterItems {
			c.g.metrics.limit("filter_items")
			return fmt.Sprintf("blocked: too many values for #%s (max %d)", key, l.MaxFilterItems)
		}
	}
	return ""
}

func (c *conn) handleReq(f *frame, b []byte) bool {
	subid, ok := f.stringAt(b, 1)
	if !ok || subid == "" {
		c.g.metrics.limit("malformed")
		return c.notice("invalid: REQ needs a non-empty subscription id string")
	}
	if f.n < 3 {
		c.g.metrics.limit("malformed")
		return c.closed(subid, "invalid: REQ needs at least one filter")
	}
	if r := c.checkSubID(subid); r != "" {
		return c.refuseReq(subid, r)
	}
	filters, reason, notice := c.parseFilters(f, b)
	if notice {
		c.unsubscribe(subid)
		return c.notice(reason)
	}
	if reason == "" {
		reason = c.privateRefusal(filters...)
	}
	if reason != "" {
		return c.refuseReq(subid, reason)
	}
	ctx, sub, ok := c.subscribe(subid, filters)
	if !ok {
		if c.ctx.Err() != nil {
			return false // the connection is closing: nothing to answer
		}
		c.g.metrics.limit("subscriptions")
		return c.closed(subid, fmt.Sprintf("blocked: too many open subscriptions, the limit is %d; CLOSE some first", c.g.lim.MaxSubscriptions))
	}
	return c.goWork("REQ", func() { c.serveStored(ctx, subid, sub) }, func(reason string) {
		if ctx.Err() != nil {
			return // replaced or closed meanwhile: the client no longer waits for it
		}
		c.unsubscribe(subid)
		c.sendWait(c.ctx, appendEnvelope(nil, "CLOSED", subid, reason))
	})
}

// refuseReq answers CLOSED for a refused REQ. NIP-01 makes a REQ replace
// the subscription of the same id, and the client now believes it closed,
// so an open one of that id is closed too.
func (c *conn) refuseReq(subid, reason string) bool {
	c.unsubscribe(subid)
	return c.closed(subid, reason)
}

// subscribe opens (or replaces) a subscription before its stored events are
// queried, so no live event between the query and EOSE is missed.
func (c *conn) subscribe(subid string, filters []nostr.Filter) (context.Context, *subscription, bool) {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	if c.ctx.Err() != nil {
		// The connection is shutting down (it is cancelled before its
		// subscriptions are closed): a subscription filed in the gate's
		// index now would outlive it.
		return nil, nil, false
	}
	old := c.subs[subid]
	if old == nil && len(c.subs) >= c.g.lim.MaxSubscriptions {
		return nil, nil, false
	}
	if old != nil {
		old.cancel()
		c.g.subs.remove(old)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	sub := &subscription{filters: filters, cancel: cancel}
	c.subs[subid] = sub
	c.g.subs.add(c, subid, sub)
	return ctx, sub, true
}

// unsubscribeIf closes subscription subid if it is still sub (not replaced
// meanwhile); it reports whether it did.
func (c *conn) unsubscribeIf(subid string, sub *subscription) bool {
	c.subsMu.Lock()
	if c.subs[subid] != sub {
		c.subsMu.Unlock()
		return false
	}
	delete(c.subs, subid)
	c.g.subs.remove(sub)
	c.subsMu.Unlock()
	sub.cancel()
	return true
}

func (c *conn) unsubscribe(subid string) {
	c.subsMu.Lock()
	s := c.subs[subid]
	delete(c.subs, subid)
	if s != nil {
		c.g.subs.remove(s)
	}
	c.subsMu.Unlock()
	if s != nil {
		s.cancel()
	}
}

func (c *conn) closeSubscriptions() {
	c.subsMu.Lock()
	subs := c.subs
	c.subs = map[string]*subscription{}
	for _, s := range subs {
		c.g.subs.remove(s)
	}
	c.subsMu.Unlock()
	for _, s := range subs {
		s.cancel()
	}
}

// openSubscriptions reports how many REQ subscriptions are open.
func (c *conn) openSubscriptions() int {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	return len(c.subs)
}

// serveStored sends the stored events of each filter, then EOSE. A filter
// with limit 0 asks for live events only.
//
// A connection's REQs are served one after the other: the store
// materialises a query's results before they are queued, so REQs sent
// together by a client that does not read would each hold their results
// at once (audit F06: 20 connections × 7 REQs took 1.3 GB). One at a time,
// the next query waits until the previous REQ's events are queued, which
// waits on the client reading them.
func (c *conn) serveStored(ctx context.Context, subid string, sub *subscription) {
	filters := sub.filters
	select {
	case c.storedTurn <- struct{}{}:
		defer func() { <-c.storedTurn }()
	case <-ctx.Done():
		return
	}
	prefix := appendEnvelope(nil, "EVENT", subid)
	prefix = prefix[:len(prefix)-1] // `["EVENT","subid"`
	for _, f := range filters {
		if f.LimitZero {
			continue
		}
		ch, err := c.queryNoting(ctx, f, &sub.seen)
		if err != nil {
			c.g.log.Warn("query failed", "filter", f.String(), "error", err)
			c.sendWait(ctx, appendEnvelope(nil, "CLOSED", subid, "error: could not query the store"))
			c.unsubscribe(subid)
			drain(ch)
			return
		}
		for evt := range ch {
			if !c.sendWait(ctx, appendEvent(prefix, evt)) {
				drain(ch)
				return
			}
		}
	}
	if ctx.Err() == nil {
		c.sendWait(ctx, appendEnvelope(nil, "EOSE", subid))
	}
}

func drain(ch chan *nostr.Event) {
	if ch == nil {
		return
	}
	go func() {
		for range ch {
		}
	}()
}

// appendEvent builds prefix + "," + event JSON + "]" in a new slice.
func appendEvent(prefix []byte, evt *nostr.Event) []byte {
	j, _ := evt.MarshalJSON()
	b := make([]byte, 0, len(prefix)+len(j)+2)
	b = append(b, prefix...)
	b = append(b, ',')
	b = append(b, j...)
	return append(b, ']')
}

func (c *conn) handleCount(f *frame, b []byte) bool {
	subid, ok := f.stringAt(b, 1)
	if !ok || subid == "" || f.n < 3 {
		c.g.metrics.limit("malformed")
		return c.notice(`invalid: COUNT takes a subscription id string and at least one filter`)
	}
	if r := c.checkSubID(subid); r != "" {
		return c.closed(subid, r)
	}
	filters, reason, notice := c.parseFilters(f, b)
	if notice {
		return c.notice(reason)
	}
	if reason == "" {
		reason = c.privateRefusal(filters...)
	}
	if reason != "" {
		return c.closed(subid, reason)
	}
	return c.goWork("COUNT", func() {
		var total int64
		for _, f := range filters {
			n, err := c.count(c.ctx, f)
			if err != nil {
				c.sendWait(c.ctx, appendEnvelope(nil, "CLOSED", subid, nostr.NormalizeOKMessage(err.Error(), "error")))
				return
			}
			total += n
		}
		env := nostr.CountEnvelope{SubscriptionID: subid, Count: &total}
		out, _ := env.MarshalJSON()
		c.sendWait(c.ctx, out)
	}, func(reason string) { c.sendWait(c.ctx, appendEnvelope(nil, "CLOSED", subid, reason)) })
}

// decodeFilters decodes a JSON array of filters (each with go-nostr's
// decoder, which refuses wrongly typed fields).
func decodeFilters(raw []byte, list *[]nostr.Filter) error {
	return json.Unmarshal(raw, list)
}
