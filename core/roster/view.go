package roster

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Entry is an author's latest accepted announcement of an identifier.
type Entry struct {
	nip34.Announcement
	Held bool // in purgatory, not served yet
}

// View is one operation's reading of one identifier: announcements loaded
// by author on demand, and the rosters resolved from them, each read once.
// It is not safe for concurrent use; build one per operation.
type View struct {
	src     *Source
	ctx     context.Context
	d       string
	exclude string
	anns    map[string]*Entry // nil: none
	rosters map[string]nip34.Roster
	err     error
}

// View starts a view of identifier d. exclude names an event to leave out
// (the announcement being decided is judged against the others).
func (s *Source) View(ctx context.Context, d, exclude string) *View {
	return &View{src: s, ctx: ctx, d: d, exclude: exclude, anns: map[string]*Entry{}, rosters: map[string]nip34.Roster{}}
}

// Identifier is the view's d.
func (v *View) Identifier() string { return v.d }

// Err is the first read error: a view that could not read treats what it
// could not see as absent, so callers that decide acceptance check it.
func (v *View) Err() error { return v.err }

// Latest returns pk's latest accepted announcement of the identifier.
func (v *View) Latest(pk string) (Entry, bool) {
	if e, ok := v.anns[pk]; ok {
		if e == nil {
			return Entry{}, false
		}
		return *e, true
	}
	var best *Entry
	f := nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Authors: []string{pk}, Tags: nostr.TagMap{"d": {v.d}}, Limit: latestQueryLimit}
	consider := func(evs []*nostr.Event, held bool) {
		for _, evt := range evs {
			if evt.ID == v.exclude || evt.PubKey != pk {
				continue
			}
			a, err := nip34.ParseAnnouncement(evt)
			if err != nil || a.Identifier != v.d {
				continue
			}
			if best == nil || nip34.Later(int64(a.CreatedAt), a.EventID, int64(best.CreatedAt), best.EventID) {
				best = &Entry{Announcement: a, Held: held}
			}
		}
	}
	st, err := v.src.query(v.ctx, f)
	v.fail(err)
	consider(st, false)
	hd, err := v.src.queryHeld(v.ctx, f)
	v.fail(err)
	consider(hd, true)
	v.anns[pk] = best
	if best != nil && best.CompatMismatch() {
		v.src.log.Debug("announcement's maintainers tag differs from its role records (ignored)", "id", best.EventID, "repo", nip34.RepoRef{Pubkey: pk, Identifier: v.d}.URLPath())
	}
	return v.Latest(pk)
}

func (v *View) fail(err error) {
	if err != nil && v.err == nil {
		v.err = err
	}
}

func (v *View) load(pk string) (nip34.Announcement, bool) {
	e, ok := v.Latest(pk)
	return e.Announcement, ok
}

// Roster is Maintainers(owner, d) (nip34.Resolve). A roster that fails a
// discovery bound is logged and counted.
func (v *View) Roster(owner string) nip34.Roster {
	if r, ok := v.rosters[owner]; ok {
		return r
	}
	r := nip34.Resolve(owner, v.load)
	v.rosters[owner] = r
	if r.Fail != "" && r.Fail != nip34.FailNoAnnouncement {
		v.src.empty.WithLabelValues(r.Fail).Inc()
		lvl := v.src.log.Debug
		if r.Fail == nip34.FailDiscoveryBound || r.Fail == nip34.FailHopBound {
			lvl = v.src.log.Warn
		}
		lvl("repository has no authorised maintainers", "repo", nip34.Npub(owner)+"/"+v.d, "reason", r.Fail)
	}
	return r
}

// closure is the forward closure of start over announcement edges
// (assignments, lead pointers, moderator assignments), by author, at most
// nip34.MaxRosterPubkeys keys, in breadth-first order. Every confirmed
// member of a roster that contains start is in it: start acknowledges a
// confirmed key, which acknowledges an earlier one, down to the seed, and
// the seed's assignments reach every confirmed key.
func (v *View) closure(start []string) []string {
	seen := map[string]bool{}
	var out []string
	queue := append([]string(nil), start...)
	for len(queue) > 0 && len(out) < nip34.MaxRosterPubkeys {
		pk := queue[0]
		queue = queue[1:]
		if seen[pk] {
			continue
		}
		seen[pk] = true
		out = append(out, pk)
		a, ok := v.load(pk)
		if !ok {
			continue
		}
		for _, next := range [][]string{a.Assigns(), a.LeadPointers(), a.ModeratorAssigns()} {
			for _, n := range next {
				if !seen[n] {
					queue = append(queue, n)
				}
			}
		}
	}
	return out
}

// Owners are the announcements (owners' latest) whose repository author
// speaks for: author is in Maintainers(owner, d) and keep accepts the
// owner's announcement (e.g. "lists this service"). Candidates come from
// author's forward closure, never from other authors' claims.
func (v *View) Owners(author string, keep func(Entry) bool) []Entry {
	var out []Entry
	for _, pk := range v.closure([]string{author}) {
		e, ok := v.Latest(pk)
		if !ok || (keep != nil && !keep(e)) {
			continue
		}
		if v.Roster(pk).Has(author) {
			out = append(out, e)
		}
	}
	return out
}

// Trusted are the latest announcements of owner's confirmed maintainers,
// owner's first: the only ones whose clone and relay URLs are trusted for
// owner's repository (maintainers-v3.md §6.8).
func (v *View) Trusted(owner string) []Entry {
	r := v.Roster(owner)
	var out []Entry
	if e, ok := v.Latest(owner); ok && r.Has(owner) {
		out = append(out, e)
	}
	for _, pk := range r.Members() {
		if pk == owner {
			continue
		}
		if e, ok := v.Latest(pk); ok {
			out = append(out, e)
		}
	}
	return out
}

// Inviters are the accepted announcements (other than a's author's) that
// name a's author in an M, m, o or maintainers entry: the announcements that
// make a worth keeping although it does not list this service
// (maintainers-v3.md §3 [R], G01-R2x). They are found by a's author in the
// index of who lists whom (listings.go), fed at acceptance, so an invitee
// that names nobody back is found too; and, for a pipeline built without
// that index (tests, `grasp plugin test`), from the keys a names and their
// forward closure. Never by reading every announcement of the identifier.
func (v *View) Inviters(a nip34.Announcement) []Entry {
	var out []Entry
	seen := map[string]bool{a.Pubkey: true}
	consider := func(pk string) {
		if seen[pk] {
			return
		}
		seen[pk] = true
		if e, ok := v.Latest(pk); ok && e.Names(a.Pubkey) {
			out = append(out, e)
		}
	}
	for _, pk := range v.src.listed.naming(a.Pubkey, v.d) {
		consider(pk)
	}
	for _, pk := range v.closure(a.Subjects()) {
		consider(pk)
	}
	return out
}

// Invited reports whether some confirmed maintainer of owner's repository
// assigns pk while pk is not confirmed (a pending invitee).
func (v *View) Invited(owner, pk string) bool {
	r := v.Roster(owner)
	if r.Has(pk) {
		return false
	}
	for _, m := range r.Members() {
		if a, ok := v.load(m); ok {
			for _, s := range a.Assigns() {
				if s == pk {
					return true
				}
			}
		}
	}
	return false
}

// States are the states (stored, then held) authored by owner's confirmed
// maintainers: read by author, never by identifier alone.
func (v *View) States(owner string) (stored, held []*nostr.Event) {
	members := v.Roster(owner).Members()
	if len(members) == 0 {
		return nil, nil
	}
	// One current state per author in the store, at most one held: the
	// limit only guards against a store that keeps old versions.
	f := nostr.Filter{Kinds: []int{nip34.KindState}, Authors: members, Tags: nostr.TagMap{"d": {v.d}}, Limit: 8 * len(members)}
	st, err := v.src.query(v.ctx, f)
	v.fail(err)
	hd, err := v.src.queryHeld(v.ctx, f)
	v.fail(err)
	return st, hd
}
