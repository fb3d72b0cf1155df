package roster

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// The index of who lists whom (maintainers-v3.md §3 [R], G01-R2x): for each
// accepted announcement, the keys it names in an M, m, o or maintainers
// entry. It answers "which accepted announcements of identifier d name pk"
// by pk, so an invitee that names nobody (a plain fork, a self-ended role, a
// moderator's self-record) is still found to be invited, without reading
// every announcement of d — a by-identifier scan anyone can fill (audit
// F03). It is fed at acceptance (the relay's stored events, purgatory's
// held ones, and on PostgreSQL the events other instances store, which
// reach OnStored too) and loaded from the store and purgatory at start.
//
// It holds one version per (author, identifier): the latest seen by
// nip34.Later, so a replaced announcement's edges go with it. Every answer
// is checked against the author's latest accepted announcement before it is
// believed (a deletion or an expired held version leaves an edge behind
// until then); the index only says where to look.
type listings struct {
	mu  sync.Mutex
	by  map[listingKey]map[string]bool // (subject, d) -> authors naming it
	ver map[listingKey]listedVersion   // (author, d) -> the version indexed
}

type listingKey struct{ pk, d string }

type listedVersion struct {
	id       string
	at       int64
	subjects []string
}

// maxInvitersChecked bounds how many indexed authors one question loads:
// the same bound as a roster's discovery.
const maxInvitersChecked = nip34.MaxRosterPubkeys

// Observe indexes an accepted announcement (stored or held): the relay's
// OnStored and purgatory's OnHold call it. Other kinds are ignored.
func (s *Source) Observe(evt *nostr.Event) {
	if evt == nil || evt.Kind != nip34.KindAnnouncement {
		return
	}
	a, err := nip34.ParseAnnouncement(evt)
	if err != nil {
		return
	}
	x := &s.listed
	x.mu.Lock()
	defer x.mu.Unlock()
	k := listingKey{a.Pubkey, a.Identifier}
	if old, ok := x.ver[k]; ok {
		if old.id == a.EventID || nip34.Later(old.at, old.id, int64(a.CreatedAt), a.EventID) {
			return
		}
		x.unlink(k, old)
	}
	if x.by == nil {
		x.by, x.ver = map[listingKey]map[string]bool{}, map[listingKey]listedVersion{}
	}
	v := listedVersion{id: a.EventID, at: int64(a.CreatedAt)}
	for _, sub := range a.Subjects() {
		if sub == a.Pubkey {
			continue
		}
		v.subjects = append(v.subjects, sub)
		sk := listingKey{sub, a.Identifier}
		if x.by[sk] == nil {
			x.by[sk] = map[string]bool{}
		}
		x.by[sk][a.Pubkey] = true
	}
	x.ver[k] = v
}

// Forget drops a held announcement that left purgatory other than by being
// released (expired, evicted, deleted): purgatory's OnRemove calls it. A
// newer version indexed since is kept.
func (s *Source) Forget(evt *nostr.Event) {
	if evt == nil || evt.Kind != nip34.KindAnnouncement {
		return
	}
	x := &s.listed
	x.mu.Lock()
	defer x.mu.Unlock()
	k := listingKey{evt.PubKey, evt.Tags.GetD()}
	if old, ok := x.ver[k]; ok && old.id == evt.ID {
		x.unlink(k, old)
		delete(x.ver, k)
	}
}

// unlink removes author k's edges of version v. Called with mu held.
func (x *listings) unlink(k listingKey, v listedVersion) {
	for _, sub := range v.subjects {
		sk := listingKey{sub, k.d}
		delete(x.by[sk], k.pk)
		if len(x.by[sk]) == 0 {
			delete(x.by, sk)
		}
	}
}

// naming are the authors indexed as naming pk in an announcement of d, in
// a fixed order, at most maxInvitersChecked.
func (x *listings) naming(pk, d string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.by[listingKey{pk, d}]
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	slices.Sort(out)
	if len(out) > maxInvitersChecked {
		out = out[:maxInvitersChecked]
	}
	return out
}

// Load indexes every announcement in the store and in purgatory; the
// server calls it once at start, after registering Observe with the relay
// and purgatory (an announcement accepted meanwhile is seen twice, which
// changes nothing).
func (s *Source) Load(ctx context.Context) error {
	const page = 1000
	// The store's query caps are for clients; this read must see all.
	ctx = eventstore.SetNegentropy(ctx)
	var until *nostr.Timestamp
	for {
		f := nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Until: until, Limit: page}
		evs, err := s.query(ctx, f)
		if err != nil {
			return fmt.Errorf("roster: load announcements: %w", err)
		}
		for _, evt := range evs {
			s.Observe(evt)
		}
		if len(evs) < page {
			break
		}
		oldest, newest := evs[0].CreatedAt, evs[0].CreatedAt
		for _, evt := range evs {
			oldest, newest = min(oldest, evt.CreatedAt), max(newest, evt.CreatedAt)
		}
		if oldest == newest {
			// A page all of one second: read that second whole.
			sec := oldest
			all, err := s.query(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Since: &sec, Until: &sec})
			if err != nil {
				return fmt.Errorf("roster: load announcements: %w", err)
			}
			for _, evt := range all {
				s.Observe(evt)
			}
			if oldest == 0 {
				break
			}
			oldest--
		}
		u := oldest
		until = &u
	}
	held, err := s.queryHeld(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}})
	if err != nil {
		return fmt.Errorf("roster: load held announcements: %w", err)
	}
	for _, evt := range held {
		s.Observe(evt)
	}
	return nil
}
