package server

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/grasp-dev/grasp/core/admin"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	gsync "github.com/grasp-dev/grasp/core/sync"
)

// loopbackHandler serves the metrics listener: /metrics and the admin
// report (core/admin says why the report is served here and not read from
// the data dir).
func (s *Server) loopbackHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(admin.StatusPath, admin.LoopbackOnly(admin.Handler(s.adminSources())))
	mux.Handle(admin.IntegrityPath, admin.LoopbackOnly(admin.IntegrityHandler(func(r *http.Request, repair bool, only nip34.RepoRef) ([]hosting.Finding, error) {
		return s.hosting.Integrity(r.Context(), repair, only)
	})))
	mux.Handle(admin.BackupPath, admin.LoopbackOnly(admin.BackupHandler(func() admin.BackupSources {
		return admin.BackupSources{DataDir: s.cfg.Server.DataDir, Backend: s.cfg.Store.Backend, Online: true,
			Repos: s.repos.EachLocked, Clock: s.clk,
			// Read when no held event is between purgatory and the store.
			Store: func(w io.Writer) error { return s.store.Backup(w) }}
	})))
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
		src.Sync = func(ctx context.Context) (gsync.Snapshot, error) {
			t := s.syncNow.Load()
			if t == nil {
				return gsync.Snapshot{}, errors.New("sync runs on the leader instance, not this one")
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
