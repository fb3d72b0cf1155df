package visibility

import (
	"context"
	"slices"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// The one question every read surface asks (issue 23 part 2): Readers for
// an event, RepoReaders for a repository, both answered from the record
// (Record, repos.go) and the current rosters. A nil answer means everyone
// may read; otherwise the function answers for an authenticated pubkey, ""
// being an unauthenticated client, who is never admitted.
//
//   - An event is private when any repository it belongs to (its own
//     names and its record) is private, or its record marks an unknown
//     repository. Its readers are the configured members and the readers of
//     any of its private repositories (the author addressed it to each); for
//     an unknown repository, its author.
//   - A repository's readers are the configured members, its owner and its
//     confirmed maintainers; a /prs/ repository's, its signer and those who
//     read every private repository whose PRs it serves.
//   - Writing needs more than reading: a key must read every private
//     repository the event belongs to (MayWrite).

// Readers returns who may see evt: nil when everyone may. An event its
// repository's moderators hid is read only by them and the members
// (moderation.go), and by no one its privacy excludes; an event the
// operator banned, or of a banned key, by the members alone.
func (v *Visibility) Readers(ctx context.Context, evt *nostr.Event) func(pubkey string) bool {
	if v.opts.Banned != nil && v.opts.Banned.Banned(evt) {
		// the operator banned it or its author (NIP-86): members only
		return v.only("")
	}
	return both(v.hidden(ctx, evt), v.private(ctx, evt))
}

// private is who may see evt by GRASP-08 alone.
func (v *Visibility) private(ctx context.Context, evt *nostr.Event) func(pubkey string) bool {
	if evt.Kind == nip34.KindPrivateGraspList {
		author := evt.PubKey
		return func(pk string) bool { return pk != "" && pk == author }
	}
	flagged := evt.Kind == nip34.KindAnnouncement && nip34.PrivateFlag(evt.Tags)
	if !flagged && !v.Restricting() {
		return nil
	}
	repos, err := v.eventRepos(ctx, evt)
	if err != nil {
		v.log.Warn("reading an event's privacy record failed; it is hidden", "id", evt.ID, "error", err)
		return v.only(evt.PubKey)
	}
	var sets []map[string]bool
	unknown := false
	for _, r := range repos {
		if r == unknownRepo {
			unknown = true
			continue
		}
		ref, err := nip34.ParseRepoRef(r)
		if err != nil {
			continue
		}
		if v.isPrivate(ref) || (flagged && ref.Pubkey == evt.PubKey && ref.Identifier == evt.Tags.GetD()) {
			sets = append(sets, v.readersOf(ctx, ref))
		}
	}
	if len(sets) == 0 && !unknown {
		if v.opts.ServiceWide {
			svc := v.serviceMembers(ctx)
			return func(pk string) bool { return v.isMember(pk) || (pk != "" && svc[pk]) }
		}
		return nil
	}
	author := evt.PubKey
	return func(pk string) bool {
		if pk == "" {
			return false
		}
		if v.isMember(pk) || (unknown && pk == author) {
			return true
		}
		for _, s := range sets {
			if s[pk] {
				return true
			}
		}
		return false
	}
}

// only admits the configured members and pk.
func (v *Visibility) only(pk string) func(string) bool {
	return func(k string) bool { return k != "" && (k == pk || v.isMember(k)) }
}

// RepoReaders returns who may read repository ref (its git data, its
// pages): nil when everyone may.
func (v *Visibility) RepoReaders(ctx context.Context, ref nip34.RepoRef) func(pubkey string) bool {
	if !v.isPrivate(ref) {
		return nil
	}
	if ref.PRs {
		rec, _ := v.record(repoKey(ref))
		var sets []map[string]bool
		for _, r := range rec.Repos {
			if c, err := nip34.ParseRepoRef(r); err == nil && v.isPrivate(c) {
				sets = append(sets, v.readersOf(ctx, c))
			}
		}
		signer := ref.Pubkey
		return func(pk string) bool {
			if pk == "" {
				return false
			}
			if pk == signer || v.isMember(pk) {
				return true
			}
			for _, s := range sets {
				if !s[pk] {
					return false
				}
			}
			return len(sets) > 0
		}
	}
	r := v.readersOf(ctx, ref)
	return func(pk string) bool { return pk != "" && (r[pk] || v.isMember(pk)) }
}

// Listed reports whether repository ref may be shown to anyone, signed in
// or not: the question a page listing repositories (the landing page, an
// index) asks before naming one.
func (v *Visibility) Listed(ctx context.Context, ref nip34.RepoRef) bool {
	return v.RepoReaders(ctx, ref) == nil
}

// Public reports whether evt may be shown to anyone (the pages, which
// serve no one signed in).
func (v *Visibility) Public(ctx context.Context, evt *nostr.Event) bool {
	return v.Readers(ctx, evt) == nil
}

// Named returns who may ask filter f at all: nil when everyone may. A
// filter names something private outright when it asks for kind 10318 (a
// user's private server list, read by its author only), names a private
// repository by #a/#A (or authors with #d for announcements and states),
// or names private events by ids, #e, #E or #q; in service-wide mode every
// filter does. A REQ, COUNT or NEG-OPEN it does not admit is refused as a
// whole (auth-required: or restricted:); other filters are answered with
// the private events left out.
func (v *Visibility) Named(ctx context.Context, f nostr.Filter) func(pubkey string) bool {
	var checks []func(string) bool
	if slices.Contains(f.Kinds, nip34.KindPrivateGraspList) {
		authors := f.Authors
		checks = append(checks, func(pk string) bool {
			return pk != "" && (len(authors) == 0 || slices.Contains(authors, pk))
		})
	}
	if v.Restricting() {
		if v.opts.ServiceWide {
			svc := v.serviceMembers(ctx)
			checks = append(checks, func(pk string) bool { return v.isMember(pk) || (pk != "" && svc[pk]) })
		}
		for _, ref := range namedRepos(f) {
			if who := v.RepoReaders(ctx, ref); who != nil {
				checks = append(checks, who)
			}
		}
		if ids := namedIDs(f); len(ids) > 0 {
			evs, err := v.lookup(ctx, ids, false)
			if err != nil {
				v.log.Warn("looking up the events a filter names failed; refusing it", "error", err)
				checks = append(checks, v.isMember)
			}
			for _, evt := range evs {
				if who := v.Readers(ctx, evt); who != nil {
					checks = append(checks, who)
				}
			}
		}
	}
	if len(checks) == 0 {
		return nil
	}
	return func(pk string) bool {
		for _, c := range checks {
			if !c(pk) {
				return false
			}
		}
		return true
	}
}

// namedRepos are the repositories f names outright.
func namedRepos(f nostr.Filter) []nip34.RepoRef {
	var refs []nip34.RepoRef
	for _, key := range []string{"a", "A", "q"} {
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
	return refs
}

// namedIDs are the event ids f names outright (ids, #e, #E, #q), each
// once, at most maxNamedIDs.
func namedIDs(f nostr.Filter) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if nip34.IsHex64(id) && !seen[id] && len(out) < maxNamedIDs {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range f.IDs {
		add(id)
	}
	for _, key := range []string{"e", "E", "q"} {
		for _, id := range f.Tags[key] {
			add(id)
		}
	}
	return out
}

// MayWrite reports whether authed (the connection's NIP-42 key, "" when
// unauthenticated) may publish evt: it must read every private repository
// evt belongs to (the ones it names and those its references reach), and
// in service-wide mode be a member, unless evt is its own announcement
// that a repository here invites it to (maintainers-v3: an invitee lists
// back before it is a member).
func (v *Visibility) MayWrite(ctx context.Context, authed string, evt *nostr.Event) bool {
	if evt.Kind == nip34.KindPrivateGraspList {
		return authed != "" && authed == evt.PubKey
	}
	flagged := evt.Kind == nip34.KindAnnouncement && nip34.PrivateFlag(evt.Tags)
	if !v.Restricting() && !flagged {
		return true
	}
	if v.isMember(authed) {
		return true
	}
	repos := ownRepos(evt)
	anc, _, err := v.ancestry(ctx, evt)
	if err != nil {
		v.log.Warn("resolving what an event references failed; refusing the write", "id", evt.ID, "error", err)
		return false
	}
	repos = append(repos, anc...)
	private := false
	ok := authed != ""
	if v.opts.ServiceWide {
		ok = ok && v.serviceMembers(ctx)[authed]
	}
	for _, r := range repos {
		if r == unknownRepo {
			private = true
			ok = ok && authed == evt.PubKey
			continue
		}
		ref, err := nip34.ParseRepoRef(r)
		if err != nil {
			continue
		}
		switch {
		case v.isPrivate(ref):
			private = true
			ok = ok && v.readersOf(ctx, ref)[authed]
		case flagged && ref.Pubkey == evt.PubKey && ref.Identifier == evt.Tags.GetD():
			// a new private repository: its author writes it
			private = true
			ok = ok && authed == evt.PubKey
		}
	}
	if !private && !v.opts.ServiceWide {
		return true
	}
	if ok {
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
		if who := v.RepoReaders(ctx, e.Repo()); who == nil || who(e.Pubkey) {
			return true
		}
	}
	return false
}

// repoAddress reads "30617:<pk>:<d>" or "30618:<pk>:<d>" as a repository.
func repoAddress(s string) (nip34.RepoRef, bool) {
	a, err := nip34.ParseAddress(s)
	if err != nil || (a.Kind != nip34.KindAnnouncement && a.Kind != nip34.KindState) || nip34.ValidateIdentifier(a.D) != nil {
		return nip34.RepoRef{}, false
	}
	return nip34.RepoRef{Pubkey: a.Pubkey, Identifier: a.D}, true
}

// PublicEvents is events with everything that is not public left out: the
// read side of the pages, which serve no one signed in (F28: an issue that
// also tags a private repository is not listed on a public one's page).
func (v *Visibility) PublicEvents(events roster.Events) roster.Events {
	return publicEvents{v: v, events: events}
}

type publicEvents struct {
	v      *Visibility
	events roster.Events
}

func (p publicEvents) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	ch, err := p.events.QueryEvents(ctx, f)
	if err != nil || ch == nil {
		return ch, err
	}
	out := make(chan *nostr.Event)
	go func() {
		defer close(out)
		defer func() {
			for range ch {
			}
		}()
		for evt := range ch {
			if !p.v.Public(ctx, evt) {
				continue
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
