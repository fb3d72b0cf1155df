package visibility

import (
	"context"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// audience is who may read something private: an authenticated key that is
// a configured member, or that is in every one of sets.
type audience struct {
	members map[string]bool
	sets    []map[string]bool
}

func (a audience) admits(pk string) bool {
	if pk == "" {
		return false
	}
	if a.members[pk] {
		return true
	}
	for _, s := range a.sets {
		if !s[pk] {
			return false
		}
	}
	return true
}

// Readers returns who may see evt: nil when everyone may, else a function
// answering for an authenticated pubkey ("" is an unauthenticated client
// and is never admitted).
func (v *Visibility) Readers(ctx context.Context, evt *nostr.Event) func(pubkey string) bool {
	if evt.Kind == nip34.KindPrivateGraspList {
		author := evt.PubKey
		return func(pk string) bool { return pk != "" && pk == author }
	}
	if evt.Kind == nip34.KindAnnouncement && nip34.PrivateFlag(evt.Tags) {
		// The announcement says so itself: private even before Observe
		// has seen it (a reader between its store and its hook, a write
		// being decided), or while what was resolved of its repository is
		// stale. Only Observe flags the identifier: a refused write must
		// not grow that memory.
		if who := v.audienceOf(ctx, v.eventRefs(ctx, evt, 2)); who != nil {
			return who
		}
		a := audience{members: v.members, sets: []map[string]bool{{evt.PubKey: true}}}
		return a.admits
	}
	if !v.Restricting() {
		return nil
	}
	return v.audienceOf(ctx, v.eventRefs(ctx, evt, 2))
}

// RepoReaders returns who may read repository ref (its git data, its
// page): nil when everyone may.
func (v *Visibility) RepoReaders(ctx context.Context, ref nip34.RepoRef) func(pubkey string) bool {
	if !v.Restricting() {
		return nil
	}
	return v.audienceOf(ctx, []nip34.RepoRef{ref})
}

// Listed reports whether repository ref may be shown to anyone, signed in
// or not: the question a page listing repositories (the landing page, an
// index) asks before naming one.
func (v *Visibility) Listed(ctx context.Context, ref nip34.RepoRef) bool {
	return v.RepoReaders(ctx, ref) == nil
}

// Named returns who may read what filter f names outright: a private
// repository by #a/#A, or by authors and #d for announcements and states;
// in service-wide mode, anything. nil when everyone may. A REQ, COUNT or
// NEG-OPEN it does not admit is refused as a whole (auth-required: or
// restricted:); other filters are answered with the private events
// removed.
func (v *Visibility) Named(ctx context.Context, f nostr.Filter) func(pubkey string) bool {
	if !v.Restricting() {
		return nil
	}
	var refs []nip34.RepoRef
	for _, key := range []string{"a", "A"} {
		for _, val := range f.Tags[key] {
			if ref, ok := repoAddress(val); ok {
				refs = append(refs, ref)
			}
		}
	}
	if ds := f.Tags["d"]; len(ds) > 0 && len(f.Authors) > 0 && len(ds)*len(f.Authors) <= maxNamedPairs &&
		(len(f.Kinds) == 0 || slices.Contains(f.Kinds, nip34.KindAnnouncement) || slices.Contains(f.Kinds, nip34.KindState)) {
		for _, pk := range f.Authors {
			for _, d := range ds {
				refs = append(refs, nip34.RepoRef{Pubkey: pk, Identifier: d})
			}
		}
	}
	return v.audienceOf(ctx, refs)
}

// MayWrite reports whether authed (the connection's NIP-42 key, "" when
// unauthenticated) may publish evt: it must be able to read it, and in
// service-wide mode be a member, unless evt is its own announcement that a
// repository here invites it to (maintainers-v3: an invitee lists back
// before it is a member).
func (v *Visibility) MayWrite(ctx context.Context, authed string, evt *nostr.Event) bool {
	if evt.Kind == nip34.KindPrivateGraspList {
		return authed != "" && authed == evt.PubKey
	}
	if !v.Restricting() && !(evt.Kind == nip34.KindAnnouncement && nip34.PrivateFlag(evt.Tags)) {
		return true
	}
	readers := v.Readers(ctx, evt)
	if readers == nil || readers(authed) {
		return true
	}
	if authed == "" || evt.Kind != nip34.KindAnnouncement || evt.PubKey != authed {
		return false
	}
	a, err := nip34.ParseAnnouncement(evt)
	if err != nil {
		return false
	}
	for _, e := range v.opts.Roster.View(ctx, a.Identifier, evt.ID).Inviters(a) {
		if v.audienceOf(ctx, []nip34.RepoRef{e.Repo()})(e.Pubkey) {
			return true
		}
	}
	return false
}

// audienceOf is who reads an event belonging to refs (none: an event of no
// repository): nil when everyone may.
func (v *Visibility) audienceOf(ctx context.Context, refs []nip34.RepoRef) func(string) bool {
	a := audience{members: v.members}
	if v.opts.ServiceWide {
		a.sets = append(a.sets, v.serviceMembers(ctx))
	}
	seen := map[nip34.RepoRef]bool{}
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		if r := v.resolve(ctx, ref); r.private {
			a.sets = append(a.sets, r.readers)
		}
	}
	if len(a.sets) == 0 {
		return nil
	}
	return a.admits
}

// eventRefs are the repositories evt belongs to: its own coordinate for an
// announcement or state, the repositories it names by a/A, and (depth
// permitting) those of the events it names by e/E/q.
func (v *Visibility) eventRefs(ctx context.Context, evt *nostr.Event, depth int) []nip34.RepoRef {
	var refs []nip34.RepoRef
	if evt.Kind == nip34.KindAnnouncement || evt.Kind == nip34.KindState {
		refs = append(refs, nip34.RepoRef{Pubkey: evt.PubKey, Identifier: evt.Tags.GetD()})
	}
	var ids []string
	for _, t := range evt.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "a", "A":
			if ref, ok := repoAddress(t[1]); ok {
				refs = append(refs, ref)
			}
		case "e", "E", "q":
			if nip34.IsHex64(t[1]) && len(ids) < maxRefLookups && !slices.Contains(ids, t[1]) {
				ids = append(ids, t[1])
			} else if ref, ok := repoAddress(t[1]); ok && t[0] == "q" {
				refs = append(refs, ref)
			}
		}
	}
	if depth > 0 && len(ids) > 0 {
		refs = append(refs, v.referenced(ctx, ids, depth-1)...)
	}
	return refs
}

// referenced are the repositories of the stored events ids. Those resolved
// with their own references (depth >= 1) are remembered, as an event never
// changes; ids not found are not.
func (v *Visibility) referenced(ctx context.Context, ids []string, depth int) []nip34.RepoRef {
	var missing []string
	var refs []nip34.RepoRef
	v.mu.Lock()
	for _, id := range ids {
		if r, ok := v.refs[id]; ok {
			refs = append(refs, r...)
		} else {
			missing = append(missing, id)
		}
	}
	v.mu.Unlock()
	if len(missing) == 0 {
		return refs
	}
	ch, err := v.opts.Events.QueryEvents(ctx, nostr.Filter{IDs: missing, Limit: len(missing)})
	if err != nil {
		v.log.Warn("looking up referenced events failed", "error", err)
		return refs
	}
	var found []*nostr.Event
	for e := range ch {
		found = append(found, e)
	}
	for _, e := range found {
		r := v.eventRefs(ctx, e, depth)
		refs = append(refs, r...)
		if depth < 1 {
			continue
		}
		v.mu.Lock()
		if len(v.refs) >= maxRefCache {
			clear(v.refs)
		}
		v.refs[e.ID] = r
		v.mu.Unlock()
	}
	return refs
}

// repoAddress reads "30617:<pk>:<d>" or "30618:<pk>:<d>" as a repository.
func repoAddress(s string) (nip34.RepoRef, bool) {
	if strings.HasPrefix(s, "30618:") {
		s = "30617:" + strings.TrimPrefix(s, "30618:")
	}
	ref, err := nip34.ParseRepoRef(s)
	return ref, err == nil
}
