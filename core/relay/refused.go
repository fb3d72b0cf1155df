package relay

import (
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/refusals"
)

// noteRefused tells the operator's log of an event answered OK false. A
// refused announcement gets a line of its own with the OK's reason: at
// info from a client, while the client's per-minute budget lasts
// (refusals.Log.Detail), at debug from a sync peer, whose refusals are
// routine (announcements that do not list this server). A client's
// rate-limited refusal of any other kind is only counted for the
// per-minute line, so a flood is one line.
func (s *Server) noteRefused(evt *nostr.Event, meta policy.Meta, res outcome.Result) {
	client := meta.Source == policy.SourceClient
	limited := res.Kind == outcome.RateLimited
	msg := res.Text()
	if evt.Kind != nip34.KindAnnouncement {
		if client && limited {
			s.opts.RefusalLog.Count(meta.Remote, refusals.EventRateLimited)
		}
		return
	}
	repo, _ := nip34.RepoOf(evt)
	if !client {
		s.log.Debug("announcement refused", "repo", repo.URLPath(), "id", evt.ID, "source", meta.Source, "reason", msg)
		return
	}
	reason := refusals.AnnouncementRefused
	if limited {
		reason = refusals.EventRateLimited
	}
	if s.opts.RefusalLog.Detail(meta.Remote, reason) {
		s.log.Info("announcement refused", "repo", repo.URLPath(), "id", evt.ID, "remote", meta.Remote, "reason", msg)
	}
}
