package hosting

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
)

// hunt asks the hunter for a held event's missing objects.
func (o *op) hunt(e purgatory.Entry, fromSync bool) {
	if o.hunter == nil || len(e.Needs) == 0 || e.Repo.PRs {
		// a /prs/ repository's data comes by push only: its PR's clone tag
		// names this server
		return
	}
	o.hunter.Need(hunt.Need{
		Repo:     e.Repo,
		OIDs:     e.Needs,
		EventID:  e.Event.ID,
		Sources:  o.sources(e.Event, e.Repo),
		FromSync: fromSync,
	})
}

// HuntHeld asks the hunter for the objects of an entry another instance
// held (a shared postgres store): the hunter runs on the leader only, so the
// leader hunts what its followers hold. A client's event waits the client
// delay, as it would have on the instance that held it.
func (h *Hosting) HuntHeld(ctx context.Context, e purgatory.Entry) {
	h.begin(ctx).hunt(e, e.Remote == "")
}

// Requeue gives the hunter every held event that waits for objects: after a
// restart its queue starts empty while purgatory does not.
func (h *Hosting) Requeue(ctx context.Context) {
	o := h.begin(ctx)
	for _, e := range h.purg.Find(func(e *purgatory.Entry) bool { return len(e.Needs) > 0 }) {
		o.hunt(e, true)
	}
}

// sources are the git URLs that may hold repo's data: a PR's own clone
// tags, and the clone URLs of every announcement (stored or held) by
// someone in the repo's maintainer set. The hunter skips our own.
func (o *op) sources(evt *nostr.Event, repo nip34.RepoRef) []string {
	seen := map[string]bool{}
	var out []string
	add := func(urls []string) {
		for _, u := range urls {
			if u != "" && !seen[u] {
				seen[u] = true
				out = append(out, u)
			}
		}
	}
	if evt != nil && (evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate) {
		if pr, err := nip34.ParsePR(evt); err == nil {
			add(pr.Clone)
		}
	}
	add(o.view(repo.Identifier).clones(repo.Pubkey))
	return out
}

// Arrived is the hunter's callback after a fetch brought objects into r.
// Releasing makes the hunter forget the repo, which cancels the fetch
// task's ctx; the release must still finish, so it runs detached with its
// own bound.
func (h *Hosting) Arrived(ctx context.Context, r nip34.RepoRef) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	o := h.begin(ctx)
	o.release(r)
	o.alignLatest(r) // a re-check's fetch has no held event to release
}

// Drifted lists hosted repos whose refs differ from their latest stored
// state, with the objects still missing and where to fetch them (the
// hunter's hourly re-check). Repos whose objects are all here are aligned
// on the spot.
func (h *Hosting) Drifted(ctx context.Context) ([]hunt.Need, error) {
	o := h.begin(ctx)
	repos, err := h.repos.List(ctx)
	var needs []hunt.Need
	for _, r := range repos {
		if ctx.Err() != nil {
			return needs, ctx.Err()
		}
		st, ok := o.view(r.Identifier).latest(r.Pubkey)
		if !ok {
			continue
		}
		cur, err := h.repos.Refs(ctx, r)
		if err != nil || sameRefs(git.StateRefs(cur), st.Refs) {
			continue
		}
		oids := values(st.Refs)
		has, err := h.repos.HasObjects(ctx, r, oids)
		if err != nil {
			continue
		}
		var missing []string
		for _, oid := range oids {
			if !has[oid] {
				missing = append(missing, oid)
			}
		}
		if len(missing) == 0 {
			o.alignLatest(r)
			continue
		}
		needs = append(needs, hunt.Need{Repo: r, OIDs: missing, Sources: o.sources(nil, r), FromSync: true})
	}
	return needs, err
}
