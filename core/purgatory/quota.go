package purgatory

import (
	"fmt"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Quotas bound what strangers can park in purgatory (audit 2026-11, F13):
// anyone may announce a repository and each held announcement costs a bare
// repository and memory until it expires. Zero fields are unbounded; the
// defaults, with their reasons, are config's ([purgatory] max_held...).
type Quotas struct {
	// MaxHeld bounds held events of every kind, in total.
	MaxHeld int
	// MaxHeldPerRemote bounds held events sent by one client address
	// (Entry.Remote; events from sync peers have none).
	MaxHeldPerRemote int
	// MaxHeldPerRelay bounds held events synced from one relay
	// (Entry.Relay): a relay named by one announcement must not fill the
	// relay-wide caps (audit F26). MaxAnnouncementsPerRelay likewise.
	MaxHeldPerRelay          int
	MaxAnnouncementsPerRelay int
	// MaxAnnouncements bounds held announcements in total; PerRemote,
	// PerAuthor and PerIdentifier by client address, by author and by `d`;
	// PerIdentifier leaves out announcements of invited keys (Entry.Invited,
	// audit F31).
	MaxAnnouncements              int
	MaxAnnouncementsPerRemote     int
	MaxAnnouncementsPerAuthor     int
	MaxAnnouncementsPerIdentifier int
}

// QuotaError is Hold's refusal of an event over a quota; its text is the
// OK message ("rate-limited: ...").
type QuotaError struct{ Msg string }

func (q *QuotaError) Error() string { return q.Msg }

func over(limit, n int) bool { return limit > 0 && n >= limit }

// admit refuses e when holding it would exceed a quota. Called under mu,
// before anything is written; holds being written count (holding).
func (p *Purgatory) admit(e *Entry) error {
	q := p.opts.Quotas
	// n is what the held entries and the holds being written have of one
	// count.
	n := func(of func(x *index) int) int { return of(p.idx) + of(p.holding) }
	refuse := func(format string, args ...any) error {
		p.events.WithLabelValues("refused", kindLabel(e.Event.Kind)).Inc()
		return &QuotaError{Msg: "rate-limited: " + fmt.Sprintf(format, args...)}
	}
	held := len(p.held) + p.holding.n
	remote := n(func(x *index) int { return x.remote[e.Remote] })
	relay := n(func(x *index) int { return x.relay[e.Relay] })
	switch {
	case over(q.MaxHeld, held):
		return refuse("%d events already wait here for their git data, the most this server holds; try again later", held)
	case e.Remote != "" && over(q.MaxHeldPerRemote, remote):
		return refuse("%d events from your address already wait here for their git data (limit %d); push their data or wait until they expire", remote, q.MaxHeldPerRemote)
	case e.Relay != "" && over(q.MaxHeldPerRelay, relay):
		return refuse("%d events synced from %s already wait here for their git data (limit %d per relay)", relay, e.Relay, q.MaxHeldPerRelay)
	}
	if !isAnnouncement(e) {
		return nil
	}
	d := e.Repo.Identifier
	total := n(func(x *index) int { return x.annTotal })
	annRemote := n(func(x *index) int { return x.annRemote[e.Remote] })
	annRelay := n(func(x *index) int { return x.annRelay[e.Relay] })
	annAuthor := n(func(x *index) int { return x.annAuthor[e.Event.PubKey] })
	annD := n(func(x *index) int { return x.annD[d] })
	switch {
	case over(q.MaxAnnouncements, total):
		return refuse("%d new repositories already wait here for their first push, the most this server holds; try again later", total)
	case e.Remote != "" && over(q.MaxAnnouncementsPerRemote, annRemote):
		return refuse("%d repositories announced from your address already wait here for their first push (limit %d); push to them or wait until they expire", annRemote, q.MaxAnnouncementsPerRemote)
	case e.Relay != "" && over(q.MaxAnnouncementsPerRelay, annRelay):
		return refuse("%d repositories synced from %s already wait here for their first push (limit %d per relay)", annRelay, e.Relay, q.MaxAnnouncementsPerRelay)
	case over(q.MaxAnnouncementsPerAuthor, annAuthor):
		return refuse("%d repositories of %s already wait here for their first push (limit %d); push to them or wait until they expire", annAuthor, nip34.Npub(e.Event.PubKey), q.MaxAnnouncementsPerAuthor)
	case !e.Invited && over(q.MaxAnnouncementsPerIdentifier, annD):
		return refuse("%d announcements of repository %q already wait here for their first push (limit %d); try again later", annD, d, q.MaxAnnouncementsPerIdentifier)
	}
	return nil
}
