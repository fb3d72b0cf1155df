package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
	"github.com/grasp-dev/grasp/core/throttle"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
)

// assembleHunter builds the git-data hunter: held events that wait for git
// objects are hunted on the repo's other clone URLs under per-domain limits
// (defaults < throttle plugins < tuning files), and every hosted repo is
// re-checked against its latest state at least hourly (GRASP-02 §3.6).
func (s *Server) assembleHunter(ext Extensions, reg prometheus.Registerer) error {
	cfg := s.cfg
	table, err := throttle.LoadFiles(cfg.Throttle.Files)
	if err != nil {
		return fmt.Errorf("throttle.files: %w", err)
	}
	var tuners []purgatory.ThrottleTuner
	if ext.Tuner != nil {
		tuners = append(tuners, ext.Tuner)
	}
	s.throttle = throttle.NewResolver(throttle.Options{
		Defaults: purgatory.Limits{Concurrency: cfg.Throttle.Concurrent, PerMinute: cfg.Throttle.PerMinute},
		Max:      purgatory.Limits{Concurrency: cfg.Throttle.MaxConcurrent, PerMinute: cfg.Throttle.MaxPerMinute},
		Tuners:   tuners,
		Table:    table,
		Logger:   s.log.Named("throttle"),
	})
	gc := &hunt.GitContext{
		RepoPath: func(r hunt.Repo) string {
			p, _ := s.repos.Path(npub(r.Owner), r.Identifier)
			return p
		},
		OnArrived:    s.grasp.arrived,
		AllowPrivate: cfg.Purgatory.FetchPrivateAddresses,
		FindDrifted:  s.grasp.drifted,
		Log:          s.log.Named("hunt"),
	}
	h, err := hunt.New(hunt.Options{
		UserDelay:    cfg.Purgatory.UserFetchDelay.D(),
		SyncDelay:    cfg.Purgatory.SyncFetchDelay.D(),
		HuntInterval: cfg.Purgatory.HuntInterval.D(),
		BackoffBase:  cfg.Purgatory.FetchBackoffBase.D(),
		BackoffMax:   cfg.Purgatory.FetchBackoffMax.D(),
		NaughtyTTL:   cfg.Purgatory.NaughtyTTL.D(),
		SelfHost:     cfg.Server.PublicURL,
		Limits:       s.throttle.Limits,
	}, gc, s.clk, s.log.Named("hunt"), reg)
	if err != nil {
		return err
	}
	s.grasp.hunter = h
	s.sched.Go("hunt", h.Run)
	s.sched.Every("hunt-recheck", cfg.Purgatory.RecheckInterval.D(), h.Recheck)
	return nil
}

// ---- the hunter's side of the glue ------------------------------------

// hunt asks the hunter for a held event's missing objects.
func (g *grasp) hunt(ctx context.Context, e purgatory.Entry, fromSync bool) {
	if g.hunter == nil || len(e.Needs) == 0 {
		return
	}
	g.hunter.Need(hunt.Need{
		Repo:     e.Repo,
		OIDs:     e.Needs,
		EventID:  e.Event.ID,
		Sources:  g.sources(ctx, e.Event, e.Repo),
		FromSync: fromSync,
	})
}

// requeueHeld gives the hunter every held event that waits for objects;
// after a restart its queue starts empty while purgatory does not.
func (g *grasp) requeueHeld(ctx context.Context) {
	for _, e := range g.purg.Find(func(e *purgatory.Entry) bool { return len(e.Needs) > 0 }) {
		g.hunt(ctx, e, true)
	}
}

// sources are the git URLs that may hold repo's data: the clone URLs of
// every announcement (stored or held) by someone in the repo's recursive
// maintainer set, and a PR's own clone tags. The hunter skips our own.
func (g *grasp) sources(ctx context.Context, evt *nostr.Event, repo purgatory.Repo) []string {
	seen := map[string]bool{}
	var out []string
	add := func(u string) {
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	if evt != nil && (evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate) {
		if pr, err := nip34.ParsePR(evt); err == nil {
			for _, u := range pr.Clone {
				add(u)
			}
		}
	}
	anns := g.announcements(ctx, repo.Identifier)
	maint := g.maintainers(repo.Owner, repo.Identifier, anns)
	for _, a := range anns {
		if maint[a.Pubkey] {
			for _, u := range a.Clone {
				add(u)
			}
		}
	}
	return out
}

// arrived is called by the hunter after a fetch brought objects into repo.
// Releasing makes the hunter forget the repo, which cancels the fetch
// task's ctx; the release must still finish, so it runs detached with its
// own bound.
func (g *grasp) arrived(ctx context.Context, r hunt.Repo) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	g.releaseRepo(ctx, r)
	g.alignLatest(ctx, r) // a re-check's fetch has no held event to release
}

// alignLatest brings a hosted repo to its latest authoritative state (the
// newest stored one, or released, a state being released right now) when
// every object of that state is present: data fetched by the hunter (or
// pushed to another maintainer's repo) lands as a push would.
func (g *grasp) alignLatest(ctx context.Context, r purgatory.Repo, released ...*nostr.Event) {
	st, ok := g.latestState(ctx, r)
	for _, evt := range released {
		p, err := nip34.ParseState(evt)
		if err != nil || (ok && st.CreatedAt > int64(evt.CreatedAt)) {
			continue
		}
		refs, head := stateRefs(p)
		st = git.StateCandidate{EventID: evt.ID, Author: evt.PubKey, CreatedAt: int64(evt.CreatedAt), Refs: refs, HEAD: head}
		ok = true
	}
	if !ok {
		return
	}
	oids := values(st.Refs)
	has, err := g.repos.HasObjects(ctx, npub(r.Owner), r.Identifier, oids)
	if err != nil || !allTrue(has, oids) {
		return
	}
	cur, err := g.repos.Refs(ctx, npub(r.Owner), r.Identifier)
	if err != nil || (sameRefs(git.StateRefs(cur), st.Refs) && st.HEAD == "") {
		return
	}
	if err := g.repos.Align(ctx, npub(r.Owner), r.Identifier, st.Refs, st.HEAD); err != nil {
		g.log.Error("align fetched repo to its state", "repo", r.Address(), "error", err)
	}
}

// latestState is the newest stored state, by created_at, authored by
// someone in the repo's recursive maintainer set.
func (g *grasp) latestState(ctx context.Context, r purgatory.Repo) (git.StateCandidate, bool) {
	anns := g.announcements(ctx, r.Identifier)
	maint := g.maintainers(r.Owner, r.Identifier, anns)
	var best git.StateCandidate
	found := false
	for _, evt := range g.query(ctx, nostr.Filter{Kinds: []int{nip34.KindState}, Tags: nostr.TagMap{"d": {r.Identifier}}}) {
		if !maint[evt.PubKey] {
			continue
		}
		st, err := nip34.ParseState(evt)
		if err != nil {
			continue
		}
		if !found || int64(evt.CreatedAt) > best.CreatedAt || (int64(evt.CreatedAt) == best.CreatedAt && evt.ID < best.EventID) {
			refs, head := stateRefs(st)
			best = git.StateCandidate{EventID: evt.ID, Author: evt.PubKey, CreatedAt: int64(evt.CreatedAt), Refs: refs, HEAD: head}
			found = true
		}
	}
	return best, found
}

// drifted lists hosted repos whose refs differ from their latest stored
// state, with the objects still missing and where to fetch them (the
// hunter's hourly re-check). Repos whose objects are all here are aligned
// on the spot.
func (g *grasp) drifted(ctx context.Context) ([]hunt.Need, error) {
	var needs []hunt.Need
	err := g.eachRepo(ctx, func(r purgatory.Repo) {
		st, ok := g.latestState(ctx, r)
		if !ok {
			return
		}
		cur, err := g.repos.Refs(ctx, npub(r.Owner), r.Identifier)
		if err != nil || sameRefs(git.StateRefs(cur), st.Refs) {
			return
		}
		oids := values(st.Refs)
		has, err := g.repos.HasObjects(ctx, npub(r.Owner), r.Identifier, oids)
		if err != nil {
			return
		}
		var missing []string
		for _, o := range oids {
			if !has[o] {
				missing = append(missing, o)
			}
		}
		if len(missing) == 0 {
			g.alignLatest(ctx, r)
			return
		}
		needs = append(needs, hunt.Need{Repo: r, OIDs: missing, Sources: g.sources(ctx, nil, r), FromSync: true})
	})
	return needs, err
}

// eachRepo calls fn for every hosted bare repo.
func (g *grasp) eachRepo(ctx context.Context, fn func(purgatory.Repo)) error {
	owners, err := os.ReadDir(g.repos.Root())
	if err != nil {
		return err
	}
	for _, o := range owners {
		if !o.IsDir() || !strings.HasPrefix(o.Name(), "npub1") {
			continue
		}
		hex, err := git.DecodeNpub(o.Name())
		if err != nil {
			continue
		}
		entries, _ := os.ReadDir(filepath.Join(g.repos.Root(), o.Name()))
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), ".git")
			if !ok || !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			fn(purgatory.Repo{Owner: hex, Identifier: id})
		}
	}
	return nil
}

func sameRefs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
