package gate

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clientip"
)

// Private is GRASP-08's reader rule as the gate asks it (core/visibility
// implements it). Every "who" function answers for an authenticated pubkey,
// "" being an unauthenticated client; a nil function admits everyone.
type Private interface {
	// Restricting reports whether anything but kind 10318 may be private
	// now (the service is private, or some repository is): then the NIP-42
	// challenge goes out as soon as a client connects, and COUNT counts
	// what the client may see.
	Restricting() bool
	// Readers is who may see evt.
	Readers(ctx context.Context, evt *nostr.Event) func(pubkey string) bool
	// Named is who may ask filter f at all (it names a private repository
	// outright, or the service is private).
	Named(ctx context.Context, f nostr.Filter) func(pubkey string) bool
	// MayWrite reports whether authed may publish evt.
	MayWrite(ctx context.Context, authed string, evt *nostr.Event) bool
	// Withholding reports whether Readers may leave out public events too:
	// a repository's moderators hid some (issue 25 part 2) or the operator
	// banned an event or a key (NIP-86, part 3).
	Withholding() bool
	// Withheld lists the events (by id, and by author) Readers may leave
	// out for those reasons: what the answers built from ids alone (COUNT,
	// the negentropy index) ask Readers about, one by one.
	Withheld() (ids, authors []string)
}

// The GRASP-08 checks of each verb live here, so the verbs' handlers call
// one function each. An unauthenticated client is answered
// "auth-required:" (and sent the challenge), an authenticated non-member
// "restricted:".

// privateReason is the refusal for a client who may not read or write
// something private.
func (c *conn) privateReason() string {
	if c.authedPubkey() == "" {
		c.requestAuth()
		return "auth-required: this is private; authenticate (NIP-42) as a member"
	}
	return "restricted: this is private and your key is not a member"
}

// privateRefusal is "" if the filters may be asked, else the CLOSED or
// NEG-ERR reason.
func (c *conn) privateRefusal(filters ...nostr.Filter) string {
	p := c.g.opts.Private
	if p == nil {
		return ""
	}
	pk := c.authedPubkey()
	for _, f := range filters {
		if who := p.Named(c.ctx, f); who != nil && !who(pk) {
			c.g.metrics.limit("private")
			return c.privateReason()
		}
	}
	return ""
}

// privateWrite is "" if the connection may publish evt, else the OK reason.
func (c *conn) privateWrite(evt *nostr.Event) string {
	p := c.g.opts.Private
	if p == nil || p.MayWrite(c.ctx, c.authedPubkey(), evt) {
		return ""
	}
	c.g.metrics.limit("private")
	return c.privateReason()
}

// visible reports whether the connection may see evt (a stored result, a
// negentropy item, a live event).
func (c *conn) visible(ctx context.Context, evt *nostr.Event) bool {
	ok, _ := c.visiblePrivate(ctx, evt)
	return ok
}

// visiblePrivate is visible, and whether evt is private (seen only
// because the connection's key reads it).
func (c *conn) visiblePrivate(ctx context.Context, evt *nostr.Event) (ok, private bool) {
	p := c.g.opts.Private
	if p == nil {
		return true, false
	}
	who := p.Readers(ctx, evt)
	if who == nil {
		return true, false
	}
	return who(c.authedPubkey()), true
}

// seesAll reports whether nothing filter f matches can be hidden from
// this connection: no repository is private, nothing is withheld by
// moderation or a ban and f cannot match a kind-10318 list. Only then may
// an answer skip the per-event check (the query's extra hop); the
// negentropy index, which knows ids and not readers, is used
// otherwise only with the lists checked (withoutHiddenLists).
func (c *conn) seesAll(f nostr.Filter) bool {
	p := c.g.opts.Private
	return p == nil || (!p.Restricting() && !mayMatchKind(f, privateListKind) && !p.Withholding())
}

// query is the backend's Query with what the connection may not see
// removed: REQ, COUNT and NEG-OPEN read through it.
func (c *conn) query(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	return c.queryNoting(ctx, f, nil)
}

// queryNoting is query, noting in seen (when not nil) the private events
// the connection reads among the results: what a revocation re-checks
// (Revoke).
func (c *conn) queryNoting(ctx context.Context, f nostr.Filter, seen *privateSeen) (chan *nostr.Event, error) {
	ch, err := c.g.backend.Query(c.asked(ctx), f)
	if err != nil || ch == nil || c.seesAll(f) {
		// nothing the filter matches can be private: no extra hop
		return ch, err
	}
	out := make(chan *nostr.Event)
	go func() {
		defer close(out)
		defer drain(ch)
		for evt := range ch {
			ok, private := c.visiblePrivate(ctx, evt)
			if !ok {
				// an unauthenticated client learns it may sign in (a
				// repository's moderator reads what it hid; nothing is
				// private on a public server, so no challenge came yet)
				if c.authedPubkey() == "" {
					c.requestAuth()
				}
				continue
			}
			if private && seen != nil {
				seen.add(evt.ID)
			}
			select {
			case out <- evt:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// asked names this connection's client in ctx: the store bounds the stored
// queries each client address runs at once (clientip.NewContext, audit
// 2026-11b F25). Every query a client's REQ, COUNT or NEG-OPEN makes goes
// through it; the server's own reads name no client.
func (c *conn) asked(ctx context.Context) context.Context {
	return clientip.NewContext(ctx, c.remote)
}

// count answers COUNT. While no repository is private it is the store's
// count, with the kind-10318 events the client may not see taken out;
// otherwise it counts the visible events of a query, so it is bounded by
// the store's query limit.
func (c *conn) count(ctx context.Context, f nostr.Filter) (int64, error) {
	ctx = c.asked(ctx)
	if c.seesAll(f) {
		return c.g.backend.Count(ctx, f)
	}
	p := c.g.opts.Private
	if p.Restricting() {
		return c.countVisible(ctx, f)
	}
	total, err := c.g.backend.Count(ctx, f)
	if err != nil {
		return 0, err
	}
	if mayMatchKind(f, privateListKind) {
		lists := f
		lists.Kinds = []int{privateListKind}
		all, err := c.g.backend.Count(ctx, lists)
		if err != nil {
			return 0, err
		}
		seen, err := c.countVisible(ctx, lists)
		if err != nil {
			return 0, err
		}
		total -= all - seen
	}
	hidden, err := c.withheldOut(ctx, f)
	if err != nil {
		return 0, err
	}
	return total - int64(len(hidden)), nil
}

// withheldOut are the events among the withheld ones (Private.Withheld:
// hidden by moderation, banned, of a banned key) that filter f matches and
// this connection may not read: what a count or a negentropy set built
// from the store's ids takes out. Kind-10318 lists are never among them.
func (c *conn) withheldOut(ctx context.Context, f nostr.Filter) (map[string]struct{}, error) {
	p := c.g.opts.Private
	if p == nil || !p.Withholding() {
		return nil, nil
	}
	ids, authors := p.Withheld()
	if len(f.IDs) > 0 {
		ids = slices.DeleteFunc(ids, func(id string) bool { return !slices.Contains(f.IDs, id) })
	}
	if len(f.Authors) > 0 {
		authors = slices.DeleteFunc(authors, func(pk string) bool { return !slices.Contains(f.Authors, pk) })
	}
	out := map[string]struct{}{}
	check := func(g nostr.Filter) error {
		// every match counts, not the first page: the limit is lifted as
		// for a negentropy set (bounded by negentropy_max_events)
		ch, err := c.g.backend.Query(eventstore.SetNegentropy(c.asked(ctx)), g)
		if err != nil {
			return fmt.Errorf("query %s: %w", g, err)
		}
		for evt := range ch {
			if !c.visible(ctx, evt) {
				out[evt.ID] = struct{}{}
			}
		}
		return nil
	}
	for len(ids) > 0 {
		n := min(len(ids), withheldPage)
		g := f.Clone()
		g.IDs, g.Limit = ids[:n], n
		ids = ids[n:]
		if err := check(g); err != nil {
			return nil, err
		}
	}
	for len(authors) > 0 {
		n := min(len(authors), withheldPage)
		g := f.Clone()
		g.Authors, g.Limit = authors[:n], c.g.lim.NegentropyMaxEvents
		authors = authors[n:]
		if err := check(g); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withheldPage is how many withheld ids or authors one query of
// withheldOut names.
const withheldPage = 500

func (c *conn) countVisible(ctx context.Context, f nostr.Filter) (int64, error) {
	ch, err := c.query(ctx, f)
	if err != nil {
		return 0, err
	}
	var n int64
	for range ch {
		n++
	}
	return n, nil
}

// privateListKind is kind 10318, a user's private server list, read by its
// author alone.
const privateListKind = 10318

func mayMatchKind(f nostr.Filter, kind int) bool {
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// challengeOnConnect sends the NIP-42 challenge at once while anything is
// private: a client whose results are silently filtered would otherwise
// never learn it could authenticate.
func (c *conn) challengeOnConnect() {
	if p := c.g.opts.Private; p != nil && p.Restricting() {
		c.requestAuth()
	}
}

// readers is who may receive evt live, decided once per event (nil:
// everyone).
func (g *Gate) readers(evt *nostr.Event) func(string) bool {
	if g.opts.Private == nil {
		return nil
	}
	return g.opts.Private.Readers(context.Background(), evt)
}

// Revoke ends, on every connection authenticated as one of keys, the
// subscriptions and negentropy sessions that carry private data the key
// no longer reads (GRASP-08, issue 23 part 3): those that received a
// private event it may no longer see (or more of them than are
// remembered), and those whose filters it may no longer ask. Each ends
// with CLOSED (NEG-ERR) "restricted:", at once; live delivery checks every
// event anyway. The client may ask again and gets what it still reads.
func (g *Gate) Revoke(keys []string) {
	if len(keys) == 0 {
		return
	}
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	for _, c := range g.snapshot() {
		if pk := c.authedPubkey(); pk != "" && set[pk] {
			c.revoke()
		}
	}
}

const msgRevoked = "restricted: your access to a private repository was withdrawn"

// maxSeenPrivate bounds the private event ids a subscription or session
// remembers; past it any revocation of its key ends it.
const maxSeenPrivate = 256

// privateSeen remembers the private events a subscription or negentropy
// session carried, up to maxSeenPrivate.
type privateSeen struct {
	mu       sync.Mutex
	ids      []string
	overflow bool
}

func (p *privateSeen) add(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.overflow:
	case len(p.ids) >= maxSeenPrivate:
		p.overflow, p.ids = true, nil
	default:
		p.ids = append(p.ids, id)
	}
}

func (p *privateSeen) snapshot() ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids...), p.overflow
}

// stillReads reports whether the connection still reads every event of
// ids it was sent (deleted ones are gone, and count as read).
func (c *conn) stillReads(ids []string) bool {
	if len(ids) == 0 {
		return true
	}
	ch, err := c.g.backend.Query(c.asked(c.ctx), nostr.Filter{IDs: ids, Limit: len(ids)})
	if err != nil {
		return false
	}
	defer drain(ch)
	for evt := range ch {
		if !c.visible(c.ctx, evt) {
			return false
		}
	}
	return true
}

func (c *conn) revoke() {
	type open struct {
		id      string
		sub     *subscription
		filters []nostr.Filter
		seen    *privateSeen
	}
	var subs, negs []open
	c.subsMu.Lock()
	for id, s := range c.subs {
		subs = append(subs, open{id, s, s.filters, &s.seen})
	}
	c.subsMu.Unlock()
	c.negMu.Lock()
	for id, s := range c.neg {
		negs = append(negs, open{id, nil, s.filters, s.seen})
	}
	c.negMu.Unlock()
	ended := func(o open) bool {
		ids, overflow := o.seen.snapshot()
		return overflow || c.privateRefusal(o.filters...) != "" || !c.stillReads(ids)
	}
	for _, o := range subs {
		if ended(o) && c.unsubscribeIf(o.id, o.sub) {
			c.g.metrics.limit("revoked")
			c.closed(o.id, msgRevoked)
		}
	}
	for _, o := range negs {
		if ended(o) {
			c.dropNegSession(o.id)
			c.g.metrics.limit("revoked")
			c.negErr(o.id, msgRevoked)
		}
	}
}
