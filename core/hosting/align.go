package hosting

import (
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// alignToState makes every bare repo for which the stored state evt is
// authoritative equal to it: the state author's own repo and every other
// maintainer's repo of the same identifier hosted here (G01-P8, G01-G4
// part 3), then releases what that makes servable.
func (o *op) alignToState(evt *nostr.Event) {
	st, err := nip34.ParseState(evt)
	if err != nil {
		o.log.Warn("cannot align to unparsable state", "id", evt.ID, "error", err)
		return
	}
	refs, head := stateRefs(st)
	owners := o.view(st.Identifier).owners(evt.PubKey)
	oids := values(refs)
	var src nip34.RepoRef
	for _, owner := range owners {
		if o.has(ref(owner, st.Identifier), oids) {
			src = ref(owner, st.Identifier)
			break
		}
	}
	if src.IsZero() {
		o.log.Warn("state objects not found in any repo", "id", evt.ID, "d", st.Identifier)
		return
	}
	if err := o.repos.Align(o.ctx, src, refs, head); err != nil {
		o.log.Error("align repo to state", "repo", src.String(), "error", err)
		return
	}
	o.propagate(src, refs, head, owners)
	for _, owner := range owners {
		o.release(ref(owner, st.Identifier))
	}
}

// alignLatest brings r to its latest authoritative state (the newest stored
// one, or released, a state being released right now) when every object of
// that state is present: data fetched by the hunter (or pushed to another
// maintainer's repo) lands as a push would.
func (o *op) alignLatest(r nip34.RepoRef, released ...*nostr.Event) {
	st, ok := o.view(r.Identifier).latest(r.Pubkey)
	for _, evt := range released {
		c, parsed := candidate(evt)
		if !parsed || (ok && !nip34.Later(c.CreatedAt, c.EventID, st.CreatedAt, st.EventID)) {
			continue
		}
		st, ok = c, true
	}
	if !ok {
		return
	}
	if !o.has(r, values(st.Refs)) {
		return
	}
	cur, err := o.repos.Refs(o.ctx, r)
	if err != nil || (sameRefs(git.StateRefs(cur), st.Refs) && st.HEAD == "") {
		return
	}
	if err := o.repos.Align(o.ctx, r, st.Refs, st.HEAD); err != nil {
		o.log.Error("align fetched repo to its state", "repo", r.String(), "error", err)
	}
}
