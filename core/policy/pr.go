package policy

import (
	"context"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/nbd-wtf/go-nostr"
)

// pr applies the PR rules (G01-P4, N34-6/7) to 1618/1619 events: they must
// reference a repository accepted here and carry `c`; they are stored when
// the tip is already in a hosted repository (git-first, G01-G5b) and held
// otherwise.
//
// With GRASP-06 (Options.GRASP06), a PR whose `clone` names this service's
// /prs/<signer npub>/<d>.git with a `d` of one of its `a` tags is also
// accepted for a repository not hosted here (G06-4/5), held until its tip
// is pushed there; a PR for a hosted repository that names its /prs/
// endpoint is released by a push to either.
func (r *Rules) pr(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	p, err := nip34.ParsePR(evt)
	if err != nil {
		return reject("invalid: PR event: %v", err)
	}
	release := meta.Source == SourcePurgatory
	if d, stop := r.resubmitted(ctx, evt, release); stop {
		return d
	}
	repos := p.Repos
	if len(repos) == 0 && p.Root != "" {
		// A PR update that names only its PR (`E`) belongs to that PR's repos.
		if repos, err = r.rootPRRepos(ctx, p.Root); err != nil {
			return r.internal("look up the PR being updated", evt, err)
		}
	}
	var prs nip34.RepoRef
	if r.opts.GRASP06 {
		prs, _ = r.opts.Service.PRsTarget(p)
	}
	if len(repos) == 0 {
		return reject("invalid: PR event must reference a repository accepted here with an 'a' tag (30617:<owner hex>:<identifier>)")
	}
	var storedRepo, heldRepo nip34.RepoRef
	var targets []roster.Entry
	seenTarget := map[nip34.RepoRef]bool{}
	views := map[string]*roster.View{}
	for _, ref := range repos {
		if len(views) >= 16 {
			break // a PR naming more identifiers than this is not credible; bound the lookups
		}
		v, ok := views[ref.Identifier]
		if !ok {
			v = r.view(ctx, ref.Identifier, "")
			views[ref.Identifier] = v
		}
		own, known := v.Latest(ref.Pubkey)
		if err := v.Err(); err != nil {
			return r.internal("load repository announcements", evt, err)
		}
		if !known || r.repoBlack.match(ref.Pubkey, ref.Identifier) {
			continue
		}
		if own.Held {
			heldRepo = ref
		} else {
			storedRepo = ref
		}
		// The PR's data goes to the repository it names and to every
		// hosted repository its owner maintains.
		cands := r.hosts(v, ref.Pubkey)
		if r.hosted(v, own.Announcement) {
			cands = append([]roster.Entry{own}, cands...)
		}
		for _, h := range cands {
			if !seenTarget[h.Repo()] {
				seenTarget[h.Repo()] = true
				targets = append(targets, h)
			}
		}
	}
	if storedRepo.IsZero() && heldRepo.IsZero() {
		if !prs.IsZero() {
			return r.prsOnly(ctx, evt, p, prs, release)
		}
		if r.opts.GRASP06 {
			return reject("invalid: PR event must reference a repository accepted on this service, or name this service's GRASP-06 endpoint %s in a 'clone' tag with the 'd' of one of its 'a' tags", r.opts.Service.PRsURL(evt.PubKey, repos[0].Identifier))
		}
		return reject("invalid: PR event must reference a repository accepted on this service; none of its 'a' tags does")
	}
	if release {
		return Decision{Outcome: Store}
	}
	present, err := r.anyHas(ctx, targets, p.Tip)
	if err != nil {
		return r.internal("check git data", evt, err)
	}
	inPRs := false
	if !prs.IsZero() && r.git != nil {
		// pushed to its /prs/ endpoint first: the tip is there
		if inPRs, err = r.git.HasCommit(ctx, prs, p.Tip); err != nil {
			return r.internal("check git data", evt, err)
		}
	}
	var effects []Effect
	if inPRs {
		// first, so the mirror brings the tip to the owner's repositories
		// before they are bound (G06-7)
		effects = append(effects, Effect{Kind: BindNostrRef, Repo: prs, EventID: evt.ID, OIDs: []string{p.Tip}})
		present = true
	}
	if present {
		for _, t := range targets {
			effects = append(effects, Effect{Kind: BindNostrRef, Repo: t.Repo(), EventID: evt.ID, OIDs: []string{p.Tip}})
		}
		if !storedRepo.IsZero() {
			return Decision{Outcome: Store, Effects: effects}
		}
		return hold(append(effects, Effect{Kind: AwaitRepo, Repo: heldRepo})...)
	}
	for _, t := range targets {
		effects = append(effects, Effect{Kind: AwaitGitData, Repo: t.Repo(), EventID: evt.ID, OIDs: []string{p.Tip}})
	}
	if !prs.IsZero() {
		effects = append(effects, Effect{Kind: AwaitGitData, Repo: prs, EventID: evt.ID, OIDs: []string{p.Tip}})
	}
	if storedRepo.IsZero() {
		effects = append(effects, Effect{Kind: AwaitRepo, Repo: heldRepo})
	}
	d := hold(effects...)
	d.Msg = MsgPRPurgatory(p.Tip, evt.ID)
	return d
}

// rootPRRepos returns the repositories of a stored or held PR.
func (r *Rules) rootPRRepos(ctx context.Context, id string) ([]nip34.RepoRef, error) {
	f := nostr.Filter{IDs: []string{id}, Kinds: []int{nip34.KindPR}}
	evs, err := r.stored(ctx, f)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		if evs, err = r.held(ctx, f); err != nil {
			return nil, err
		}
	}
	for _, e := range evs {
		if p, err := nip34.ParsePR(e); err == nil {
			return p.Repos, nil
		}
	}
	return nil, nil
}

// prsOnly decides a PR for a repository not hosted here that names its
// GRASP-06 endpoint prs (G06-4): stored when its tip was pushed there
// first, held until the push otherwise. Whether the tip is the one pushed
// is settled by the effects (a placeholder at another commit is deleted,
// G06-6).
func (r *Rules) prsOnly(ctx context.Context, evt *nostr.Event, p nip34.PR, prs nip34.RepoRef, release bool) Decision {
	if release {
		return Decision{Outcome: Store}
	}
	present := false
	if r.git != nil {
		var err error
		if present, err = r.git.HasCommit(ctx, prs, p.Tip); err != nil {
			return r.internal("check git data", evt, err)
		}
	}
	if present {
		return Decision{Outcome: Store, Effects: []Effect{{Kind: BindNostrRef, Repo: prs, EventID: evt.ID, OIDs: []string{p.Tip}}}}
	}
	d := hold(Effect{Kind: AwaitGitData, Repo: prs, EventID: evt.ID, OIDs: []string{p.Tip}})
	d.Msg = MsgPRPurgatory(p.Tip, evt.ID)
	return d
}
