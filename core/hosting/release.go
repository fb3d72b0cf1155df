package hosting

import (
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
		o.log.Error("read refs for release", "repo", r.String(), "error", err)
		return
	}
	hasData := len(git.StateRefs(refs)) > 0
	evs, err := o.purg.Release(r, hasData, func(oids []string) bool { return o.has(r, oids) })
	if err != nil {
		o.log.Error("release from purgatory", "repo", r.String(), "error", err)
	}
	// In release order (announcement first, so the events after it pass
	// their re-check), each event is re-checked, its git side made right,
	// then published: a client that sees a released state or PR can fetch
	// its refs at once.
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
				o.bindNostrRef(r, evt.ID, pr.Tip)
			}
		}
		if err := o.publish(o.ctx, evt); err != nil {
			o.log.Error("publish released event", "id", evt.ID, "error", err)
			continue
		}
		switch evt.Kind {
		case nip34.KindState:
			v.stored(evt)
		case nip34.KindAnnouncement:
			o.recheckRejected(evt.Tags.GetD())
		}
		if notable(evt.Kind) {
			o.log.Info(kindName(evt.Kind)+" released from purgatory", "id", evt.ID, "repo", r.String())
		} else {
			o.log.Debug("released from purgatory", "id", evt.ID, "kind", evt.Kind)
		}
		if o.hunter != nil {
			o.hunter.ForgetEvent(r, evt.ID)
		}
	}
}
