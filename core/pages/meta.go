package pages

import (
	"context"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/nip34"
)

type person struct {
	Npub, Short string
}

func personOf(pk string) person {
	n := nip34.Npub(pk)
	short := n
	if len(n) > 20 {
		short = n[:12] + "…" + n[len(n)-6:]
	}
	return person{Npub: n, Short: short}
}

// repoMeta is what the announcements say about a repository: read through
// core/roster, which applies the v3 maintainer rule.
type repoMeta struct {
	Announced    bool
	Held         bool // the announcement waits in purgatory for its git data
	Name         string
	Description  string
	Web          []string
	Clone        []string
	Relays       []string
	Owner        person
	Maintainers  []person // confirmed, owner excluded
	Invited      []person // named by a confirmed maintainer, not (yet) listing back
	Moderators   []person
	Coordinates  []string // 30617:<pk>:<d> of the owner and every confirmed maintainer
	Members      map[string]bool
	ref          nip34.RepoRef
	roster       nip34.Roster
	WebClientURL string
}

func (p *Pages) meta(ctx context.Context, repo nip34.RepoRef) repoMeta {
	v := p.opts.Roster.View(ctx, repo.Identifier, "")
	m := repoMeta{ref: repo, Owner: personOf(repo.Pubkey), Name: repo.Identifier, Members: map[string]bool{}}
	m.WebClientURL = p.opts.WebClient + "/" + repo.Npub() + "/" + escapeSegment(repo.Identifier)
	if e, ok := v.Latest(repo.Pubkey); ok {
		a := e.Announcement
		m.Announced, m.Held = true, e.Held
		if a.Name != "" {
			m.Name = a.Name
		}
		m.Description, m.Web, m.Clone, m.Relays = a.Description, a.Web, a.Clone, a.Relays
		if naddr, err := nip19.EncodeEntity(repo.Pubkey, nip34.KindAnnouncement, repo.Identifier, firstN(a.Relays, 2)); err == nil {
			m.WebClientURL = p.opts.WebClient + "/" + naddr
		}
	}
	r := v.Roster(repo.Pubkey)
	m.roster = r
	m.Coordinates = []string{coordinate(repo.Pubkey, repo.Identifier)}
	m.Members[repo.Pubkey] = true
	invited := map[string]bool{}
	for _, pk := range r.Members() {
		m.Members[pk] = true
		if pk == repo.Pubkey {
			continue
		}
		m.Maintainers = append(m.Maintainers, personOf(pk))
		m.Coordinates = append(m.Coordinates, coordinate(pk, repo.Identifier))
	}
	for _, pk := range r.Members() {
		e, ok := v.Latest(pk)
		if !ok {
			continue
		}
		for _, a := range e.Assigns() {
			if !invited[a] && v.Invited(repo.Pubkey, a) {
				invited[a] = true
				m.Invited = append(m.Invited, personOf(a))
			}
		}
	}
	for pk := range r.Moderators {
		m.Moderators = append(m.Moderators, personOf(pk))
	}
	return m
}

// speakers are the keys whose statuses, labels and cover notes count for
// any root of the repository besides the root's author: the owner, the
// confirmed maintainers and the moderators (nip34.Roster.Speaks).
func (m repoMeta) speakers() []string {
	out := make([]string, 0, len(m.Members)+len(m.roster.Moderators))
	for pk := range m.Members {
		out = append(out, pk)
	}
	for pk := range m.roster.Moderators {
		if !m.Members[pk] {
			out = append(out, pk)
		}
	}
	return out
}

func coordinate(pk, d string) string {
	return nip34.RepoRef{Pubkey: pk, Identifier: d}.String()
}

func firstN(s []string, n int) []string { return s[:min(len(s), n)] }
