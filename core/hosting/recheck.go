package hosting

import (
	"context"

	"github.com/grasp-dev/grasp/core/policy"
)

// recheckRejected runs the states of identifier d refused in the last
// roster.RejectedTTL through the write path again, after the current
// request: an announcement of d changed, so a roster may have grown (an
// invitee's acceptance often arrives just after its first state;
// maintainers-v3.md §3 [R]).
func (o *op) recheckRejected(d string) {
	if o.ingest == nil {
		return
	}
	evs := o.roster.TakeRejected(d)
	if len(evs) == 0 {
		return
	}
	o.spawn(func(ctx context.Context) {
		for _, evt := range evs {
			r := o.ingest(ctx, evt, policy.Meta{Source: policy.SourceRecheck, ReceivedAt: o.clk.Now()})
			o.log.Info("re-evaluated a rejected state after an announcement changed", "id", evt.ID, "repo", ref(evt.PubKey, d).URLPath(), "ok", r.OK(), "outcome", r.Kind, "msg", r.Text())
		}
	})
}

// Recheck is recheckRejected for an announcement of d that another
// instance sharing the store took (core/store's Follow): each instance
// keeps the states it refused, so every instance re-runs its own whichever
// instance the announcement reached (issue 24 part 8).
func (h *Hosting) Recheck(ctx context.Context, d string) { h.begin(ctx).recheckRejected(d) }
