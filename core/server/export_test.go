package server

import (
	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/relay"
	"github.com/grasp-dev/grasp/core/relaysync"
)

// The end-to-end tests are package server_test: they start a Server
// through New and Start and drive it as clients and operators do (websocket,
// git over HTTP, NIP-86, NIP-11, /metrics, Reload, the config and the
// registry they hand it). These hooks are the only doors they have into a
// running Server, for what no client and no operator can reach: each
// returns a part the server assembled, for a test that must inject or
// inspect below the wire. This file is compiled only with the tests; none
// of it is API.

// Repos is the bare-repository store: the on-disk layout a test inspects
// (objects, hooks, the /prs/ tree), the lock a test holds to make another
// instance wait, and a repository's data removed and recreated to simulate
// its loss.
func (s *Server) Repos() *git.Repos { return s.repos }

// Purgatory is what is held: whether an event waits for its git data, and
// how many do (a hold injected directly, for benchmarks of the release).
func (s *Server) Purgatory() *purgatory.Purgatory { return s.purg }

// Relay is the write path, for events that arrive by another door than a
// client's websocket: GRASP-02 sync (policy.SourceSync, with or without a
// peer's address) and the internal publisher.
func (s *Server) Relay() *relay.Server { return s.relay }

// Hosting runs the leader's scheduled GRASP-01 jobs now (the purgatory
// sweep, git maintenance, the integrity check, the GRASP-05 archive count)
// instead of on their hourly timers.
func (s *Server) Hosting() *hosting.Hosting { return s.hosting }

// Hunter is the git-data hunter, for its counters (repositories watched,
// fetches made) that no metric reports exactly.
func (s *Server) Hunter() *hunt.Hunter { return s.hunter }

// Restricting reports whether anything may be private now, which decides
// whether a connection gets its AUTH challenge on connect (visibility).
func (s *Server) Restricting() bool { return s.vis.Restricting() }

// SyncManager is the GRASP-02 sync manager of the current leadership term,
// for its per-relay view (status, filters); nil when this instance runs no
// sync (a follower, or sync off).
func (s *Server) SyncManager() *relaysync.Manager {
	if t := s.syncNow.Load(); t != nil {
		return t.mgr
	}
	return nil
}

// AdminSources is what `grasp admin status` reads, for a status built in
// the test without the admin listener and its token.
func (s *Server) AdminSources() admin.Sources { return s.adminSources() }
