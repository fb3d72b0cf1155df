package server

import (
	"context"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/pages"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
)

// pageFacts hands the repository pages the parts' read-only views (issue
// 26 part 5). The hunter and sync run on the leader: on a follower their
// sections say so.
func (s *Server) pageFacts() pages.Facts {
	return pages.Facts{
		Served:  s.hosting.Served,
		Waiting: s.purg.WaitingFor,
		Hunt: func(ctx context.Context, repo nip34.RepoRef) (hunt.RepoHunt, bool, bool) {
			if !s.hunter.Runs() {
				return hunt.RepoHunt{}, false, false
			}
			h, ok := s.hunter.Repo(ctx, repo)
			return h, ok, true
		},
		Relay: func(url string) (pages.RelayHealth, bool) {
			t := s.syncNow.Load()
			if t == nil {
				return pages.RelayHealth{}, false
			}
			st, ok := t.health.State(url)
			if !ok {
				return pages.RelayHealth{}, false
			}
			return pages.RelayHealth{Status: t.health.Status(url).String(), Failures: st.Failures, LastOK: st.LastOK, LastFailure: st.LastFailure}, true
		},
		Refusals: s.refusals.Last,
	}
}
