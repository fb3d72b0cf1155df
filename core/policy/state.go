package policy

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// state applies G01-G2's event side to a kind-30618 event: only from the
// v3 roster (maintainers-v3.md §2) of a known repository (stored or held),
// stored
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
	if d, bad := r.futureDated(evt); bad {
		return d
	}
	v := r.view(ctx, s.Identifier, "")
	targets := r.hosts(v, s.Pubkey)
	if err := v.Err(); err != nil {
		return r.internal("load repository announcements", evt, err)
	}
	if len(targets) == 0 {
		// Every refusal by the roster is re-evaluated when an announcement
		// of the identifier changes, also "no announcement": sync delivers
		// states and announcements in any order, and an invitee's state
		// often comes before the announcements that confirm it.
		r.roster.RememberRejected(evt)
		if len(v.Owners(s.Pubkey, nil)) > 0 {
			// Authorised, but by announcements that do not list this
			// service: there is no repository here to align.
			return reject("invalid: no announcement exists for this repository")
		}
		if !r.anyAnnounced(ctx, s.Identifier) {
			return reject("invalid: no announcement exists for this repository")
		}
		r.noteInvitee(ctx, v, s.Pubkey)
		return reject("invalid: author not authorized for this repository")
	}
	newer, err := r.stored(ctx, nostr.Filter{Kinds: []int{nip34.KindState}, Authors: []string{s.Pubkey}, Tags: nostr.TagMap{"d": []string{s.Identifier}}, Since: &evt.CreatedAt})
	if err != nil {
		return r.internal("look up newer states", evt, err)
	}
	for _, n := range newer {
		if n.ID != evt.ID && nip34.LaterEvent(n, evt) {
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
			if t.Held && !release {
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
func (r *Rules) allPresent(ctx context.Context, repos []roster.Entry, oids []string) (bool, error) {
	for _, oid := range oids {
		found, err := r.anyHas(ctx, repos, oid)
		if err != nil || !found {
			return false, err
		}
	}
	return true, nil
}

func (r *Rules) anyHas(ctx context.Context, repos []roster.Entry, oid string) (bool, error) {
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

// futureDated refuses a 30617 or 30618 dated more than
// nip34.MaxFutureSkew ahead (maintainers-v3.md §6.7): it would pin itself
// as the latest version whatever the author publishes next.
func (r *Rules) futureDated(evt *nostr.Event) (Decision, bool) {
	if int64(evt.CreatedAt) > r.clk.Now().Unix()+nip34.MaxFutureSkew {
		return reject("invalid: created_at is more than 15 minutes in the future; repository announcements and states must not be dated ahead"), true
	}
	return Decision{}, false
}

// noteInvitee leaves the operator a trace when a state's author is invited
// by a hosted repository of this identifier but has not listed back: the
// legacy one-way listings that v3 no longer authorises. The repositories
// looked at are the few that name the author, from a bounded read; it
// changes no decision.
func (r *Rules) noteInvitee(ctx context.Context, v *roster.View, author string) {
	f := nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Tags: nostr.TagMap{"d": []string{v.Identifier()}}, Limit: inviteeHintRows}
	st, _ := r.stored(ctx, f)
	hd, _ := r.held(ctx, f)
	checked := 0
	for _, evt := range append(st, hd...) {
		a, err := nip34.ParseAnnouncement(evt)
		if err != nil || !a.Names(author) || !r.hosted(v, a) {
			continue
		}
		if checked++; checked > 4 {
			return
		}
		if v.Invited(a.Pubkey, author) {
			r.roster.NoteInviteeRefused("state", a.Pubkey, author, v.Identifier())
			return
		}
	}
}

// inviteeHintRows bounds noteInvitee's read.
const inviteeHintRows = 32
