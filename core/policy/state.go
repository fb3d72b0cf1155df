package policy

import (
	"context"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// state applies G01-G2's event side to a kind-30618 event: only from the
// recursive maintainer set of a known repository (stored or held), stored
// at once when every object it names is here, otherwise held.
func (r *Rules) state(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	s, err := nip34.ParseState(evt)
	if err != nil {
		return reject("invalid: repository state: %v", err)
	}
	if r.repoBlack.match(s.Pubkey, s.Identifier) {
		return reject("blocked: %s is blacklisted on this server", r.repoBlack.why(s.Pubkey, s.Identifier))
	}
	release := meta.Source == SourcePurgatory
	if d, stop := r.resubmitted(ctx, evt, release); stop {
		return d
	}
	v, err := r.loadRepo(ctx, s.Identifier, "")
	if err != nil {
		return r.internal("load repository announcements", evt, err)
	}
	if len(v.all) == 0 {
		return reject("invalid: no announcement exists for this repository")
	}
	targets := r.hosts(v, s.Pubkey)
	if len(targets) == 0 {
		for _, a := range v.all {
			if r.maintainers(a.Pubkey, s.Identifier, v.all)[s.Pubkey] {
				// Authorised, but by announcements that do not list this
				// service: there is no repository here to align.
				return reject("invalid: no announcement exists for this repository")
			}
		}
		return reject("invalid: author not authorized for this repository")
	}
	newer, err := r.stored(ctx, nostr.Filter{Kinds: []int{nip34.KindState}, Authors: []string{s.Pubkey}, Tags: nostr.TagMap{"d": []string{s.Identifier}}, Since: &evt.CreatedAt})
	if err != nil {
		return r.internal("look up newer states", evt, err)
	}
	for _, n := range newer {
		if n.ID != evt.ID && (n.CreatedAt > evt.CreatedAt || n.ID < evt.ID) {
			return Decision{Outcome: Shadow, Msg: "duplicate: a newer state for this repository is already stored"}
		}
	}

	present := release
	if !present {
		present, err = r.allPresent(ctx, targets, s.OIDs())
		if err != nil {
			return r.internal("check git data", evt, err)
		}
	}
	var effects []Effect
	if present {
		for _, t := range targets {
			effects = append(effects, Effect{Kind: AlignRepo, Repo: t.Repo()})
			if v.isHeld[t.Pubkey] && !release {
				effects = append(effects, Effect{Kind: ReleaseHeld, Repo: t.Repo()})
			}
		}
		return Decision{Outcome: Store, Effects: effects}
	}
	for _, t := range targets {
		effects = append(effects, Effect{Kind: AwaitGitData, Repo: t.Repo(), OIDs: s.OIDs()})
	}
	return hold(effects...)
}

// allPresent reports whether every oid exists in at least one of the
// hosted repositories (the caller copies objects between them on align).
func (r *Rules) allPresent(ctx context.Context, repos []nip34.Announcement, oids []string) (bool, error) {
	for _, oid := range oids {
		found, err := r.anyHas(ctx, repos, oid)
		if err != nil || !found {
			return false, err
		}
	}
	return true, nil
}

func (r *Rules) anyHas(ctx context.Context, repos []nip34.Announcement, oid string) (bool, error) {
	if r.git == nil {
		return false, nil
	}
	for _, a := range repos {
		ok, err := r.git.HasCommit(ctx, nip34.RepoRef{Pubkey: a.Pubkey, Identifier: a.Identifier}, oid)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// resubmitted answers a client or sync peer that sends an event purgatory
// already holds: OK true "duplicate: in purgatory" (G01-P6), nothing done.
// Releases from purgatory (release) are not resubmissions.
func (r *Rules) resubmitted(ctx context.Context, evt *nostr.Event, release bool) (Decision, bool) {
	if release {
		return Decision{}, false
	}
	dup, err := r.isHeldID(ctx, evt.ID)
	if err != nil {
		return r.internal("check purgatory", evt, err), true
	}
	if dup {
		return Decision{Outcome: Shadow, Msg: MsgInPurgatory}, true
	}
	return Decision{}, false
}
