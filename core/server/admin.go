package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/relaysync"
)

// loopbackHandler serves the metrics listener bound at addr: /metrics and,
// behind admin.Guard (loopback, no Origin, own Host, the token), the admin
// commands (core/admin says why they are served here and not read from the
// data dir).
func (s *Server) loopbackHandler(addr net.Addr, token string) http.Handler {
	guard := admin.Guard{Token: token, Addr: addr, TokenFile: s.cfg.AdminToken(), Log: s.log.Named("admin")}
	mux := http.NewServeMux()
	mux.Handle(admin.StatusPath, guard.Wrap(admin.Handler(s.adminSources())))
	mux.Handle(admin.IntegrityPath, guard.Wrap(admin.IntegrityHandler(func(r *http.Request, repair bool, only nip34.RepoRef) ([]hosting.Finding, int, error) {
		return s.hosting.IntegrityCounted(r.Context(), repair, only)
	})))
	mux.Handle(admin.BackupPath, guard.Wrap(admin.BackupHandler(func() admin.BackupSources {
		return admin.BackupSources{DataDir: s.cfg.Server.DataDir, Backend: s.cfg.Store.Backend, Online: true,
			Repos: s.repos.EachLocked, Refs: s.repos.RefsIn, Clock: s.clk, Leave: []string{s.cfg.AdminToken()},
			// Read when no held event is between purgatory and the store.
			Store: func(w io.Writer) error { return s.store.Backup(w) }}
	}, s.log.Named("admin"))))
	// Any other admin path is guarded too: the guard's refusal, or 404.
	mux.Handle("/admin/", guard.Wrap(http.NotFoundHandler()))
	mux.Handle("/", s.metrics.Handler())
	return mux
}

func (s *Server) adminSources() admin.Sources {
	src := admin.Sources{
		Repos:        s.repos.List,
		Private:      s.vis.PrivateRepositories,
		Held:         func() []purgatory.Entry { return s.purg.Find(func(*purgatory.Entry) bool { return true }) },
		Placeholders: s.purg.Placeholders,
		Hunter:       s.hunter.Stats,
		Clock:        s.clk,
	}
	if s.cfg.Sync.Enabled {
		src.Sync = func(ctx context.Context) (relaysync.Snapshot, error) {
			t := s.syncNow.Load()
			if t == nil {
				return relaysync.Snapshot{}, errors.New("sync runs on the leader instance, not this one")
			}
			return t.mgr.Snapshot(ctx)
		}
		src.Health = func(url string) string {
			if t := s.syncNow.Load(); t != nil {
				return t.health.Status(url).String()
			}
			return "unknown (not the leader)"
		}
	}
	return src
}
