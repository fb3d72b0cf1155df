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
// before anything is written.
func (p *Purgatory) admit(e *Entry) error {
	q, x := p.opts.Quotas, p.idx
	refuse := func(format string, args ...any) error {
		p.events.WithLabelValues("refused", kindLabel(e.Event.Kind)).Inc()
		return &QuotaError{Msg: "rate-limited: " + fmt.Sprintf(format, args...)}
	}
	switch {
	case over(q.MaxHeld, len(p.held)):
		return refuse("%d events already wait here for their git data, the most this server holds; try again later", len(p.held))
	case e.Remote != "" && over(q.MaxHeldPerRemote, x.remote[e.Remote]):
		return refuse("%d events from your address already wait here for their git data (limit %d); push their data or wait until they expire", x.remote[e.Remote], q.MaxHeldPerRemote)
	case e.Relay != "" && over(q.MaxHeldPerRelay, x.relay[e.Relay]):
		return refuse("%d events synced from %s already wait here for their git data (limit %d per relay)", x.relay[e.Relay], e.Relay, q.MaxHeldPerRelay)
	}
	if !isAnnouncement(e) {
		return nil
	}
	d := e.Repo.Identifier
	switch {
	case over(q.MaxAnnouncements, x.annTotal):
		return refuse("%d new repositories already wait here for their first push, the most this server holds; try again later", x.annTotal)
	case e.Remote != "" && over(q.MaxAnnouncementsPerRemote, x.annRemote[e.Remote]):
		return refuse("%d repositories announced from your address already wait here for their first push (limit %d); push to them or wait until they expire", x.annRemote[e.Remote], q.MaxAnnouncementsPerRemote)
	case e.Relay != "" && over(q.MaxAnnouncementsPerRelay, x.annRelay[e.Relay]):
		return refuse("%d repositories synced from %s already wait here for their first push (limit %d per relay)", x.annRelay[e.Relay], e.Relay, q.MaxAnnouncementsPerRelay)
	case over(q.MaxAnnouncementsPerAuthor, x.annAuthor[e.Event.PubKey]):
		return refuse("%d repositories of %s already wait here for their first push (limit %d); push to them or wait until they expire", x.annAuthor[e.Event.PubKey], nip34.Npub(e.Event.PubKey), q.MaxAnnouncementsPerAuthor)
	case !e.Invited && over(q.MaxAnnouncementsPerIdentifier, x.annD[d]):
		return refuse("%d announcements of repository %q already wait here for their first push (limit %d); try again later", x.annD[d], d, q.MaxAnnouncementsPerIdentifier)
	}
	return nil
}
