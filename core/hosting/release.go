package hosting

import (
	"slices"
	"sort"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/policy"
)

// release releases what the git data now in r makes servable, and
// publishes it after the rules confirm it (bans and deletions re-checked).
func (o *op) release(r nip34.RepoRef) {
	if !o.repos.Exists(r) {
		return
	}
	refs, err := o.repos.Refs(o.ctx, r)
	if err != nil {
		o.log.Error("read refs for release", "repo", r.URLPath(), "error", err)
		return
	}
	hasData := len(git.StateRefs(refs)) > 0
	if !hasData && !r.PRs {
		// N34-2: a 30618 with no refs is a valid empty state; a repository
		// whose authoritative stored state is empty has all the data it
		// will have, so its held announcement goes out (else it would wait
		// for a push that never comes, and expire).
		st, ok := o.view(r.Identifier).latest(r.Pubkey)
		hasData = ok && len(st.Refs) == 0
	}
	evs, err := o.purg.Release(r, hasData, func(oids []string) bool { return o.has(r, oids) })
	if err != nil {
		o.log.Error("release from purgatory", "repo", r.URLPath(), "error", err)
	}
	// They leave purgatory only once published (or dropped on re-check):
	// an event acknowledged OK is in purgatory or in the store at every
	// moment, for a crash as for a push or roster read meanwhile. One whose
	// publishing failed stays held for the next release.
	var failed []*nostr.Event
	defer func() {
		done := evs
		if len(failed) > 0 {
			done = slices.DeleteFunc(slices.Clone(evs), func(e *nostr.Event) bool { return slices.Contains(failed, e) })
			o.purg.Unreleased(failed)
		}
		if err := o.purg.Published(o.ctx, done); err != nil {
			o.log.Error("remove released events from purgatory", "repo", r.URLPath(), "error", err)
		}
	}()
	// In release order (announcement first, so the events after it pass
	// their re-check), each event is re-checked, its git side made right,
	// then published: a client that sees a released state or PR can fetch
	// its refs at once.
	// r's own announcement before the other announcements released with
	// it: purgatory orders announcements by created_at, and an invitee's
	// announcement that does not list this service is kept only because
	// r's invites it (G01-R2x), so it must be re-checked after r's is
	// published — else an acceptance signed before the owner's
	// announcement is refused on release.
	sort.SliceStable(evs, func(i, j int) bool { return announces(evs[i], r) && !announces(evs[j], r) })
	var newest *nostr.Event
	for _, evt := range evs {
		if evt.Kind == nip34.KindState && (newest == nil || nip34.LaterEvent(evt, newest)) {
			newest = evt
		}
	}
	v := o.view(r.Identifier)
	for _, evt := range evs {
		d := o.rules.Decide(o.ctx, evt, policy.Meta{Source: policy.SourcePurgatory, ReceivedAt: o.clk.Now()})
		if d.Outcome != policy.Store {
			o.log.Info("released event refused on re-check", "id", evt.ID, "msg", d.Msg)
			continue
		}
		switch evt.Kind {
		case nip34.KindState:
			if evt == newest {
				o.alignLatest(r, evt)
			}
		case nip34.KindPR, nip34.KindPRUpdate:
			if pr, err := nip34.ParsePR(evt); err == nil {
				o.bindNostrRef(r, evt, pr.Tip)
				if t, ok := o.service.PRsTarget(pr); ok && !r.PRs {
					// pushed to its /prs/ endpoint while its repository's
					// announcement was held: mirror it now (G06-7)
					o.bindPRs(t, evt, pr.Tip)
				}
			}
		}
		if err := o.publish(o.ctx, evt); err != nil {
			o.log.Error("publish released event; it stays held", "id", evt.ID, "error", err)
			failed = append(failed, evt)
			continue
		}
		switch evt.Kind {
		case nip34.KindState:
			v.stored(evt)
		case nip34.KindAnnouncement:
			o.recheckRejected(evt.Tags.GetD())
		}
		if notable(evt.Kind) {
			o.log.Info(nip34.KindName(evt.Kind)+" released from purgatory", "id", evt.ID, "repo", r.URLPath())
		} else {
			o.log.Debug("released from purgatory", "id", evt.ID, "kind", evt.Kind)
		}
		if o.hunter != nil {
			o.hunter.ForgetEvent(r, evt.ID)
		}
	}
}

// announces reports whether evt is r's own announcement.
func announces(evt *nostr.Event, r nip34.RepoRef) bool {
	return evt.Kind == nip34.KindAnnouncement && evt.PubKey == r.Pubkey && evt.Tags.GetD() == r.Identifier
}
