package server

import (
	"context"
	"time"

	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/throttle"
)

// assembleHunter builds the git-data hunter: held events that wait for git
// objects are hunted on the repo's other clone URLs under per-domain limits
// (defaults < throttle plugins < tuning files), and every hosted repo is
// re-checked against its latest state at least hourly (GRASP-02 §3.6). The
// caller sets the returned context's callbacks to the effects.
func (s *Server) assembleHunter(ext Extensions) (*hunt.GitContext, error) {
	cfg := s.cfg
	topts, err := throttle.Configured(cfg.Throttle, ext.Tuner)
	if err != nil {
		return nil, err
	}
	s.throttle = throttle.NewResolver(topts, s.env.Named("throttle"))
	// A git that cannot pin fetches keeps the hunter off (logged, and
	// grasp_hunt_enabled 0); the server still runs.
	vctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	disabled := hunt.CheckGit(vctx, s.repos, cfg.Purgatory.FetchPrivateAddresses)
	cancel()
	gc := &hunt.GitContext{
		Repos:        s.repos,
		AllowPrivate: cfg.Purgatory.FetchPrivateAddresses,
		Log:          s.log.Named("hunt"),
	}
	s.hunter, err = hunt.New(hunt.Options{
		Sync:      gc,
		Config:    cfg.Purgatory,
		SelfHosts: append([]string{cfg.Server.PublicURL}, cfg.Server.PublicURLAliases...),
		Limits:    s.throttle.Limits,
		Labelled:  s.throttle.Named,
		Disabled:  disabled,
	}, s.env.Named("hunt"))
	return gc, err
}
