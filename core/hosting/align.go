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
	v := o.view(st.Identifier)
	all := v.owners(evt.PubKey)
	owners := v.following(all, int64(evt.CreatedAt), evt.ID)
	oids := values(refs)
	var src nip34.RepoRef
	for _, owner := range owners {
		if o.has(ref(owner, st.Identifier), oids) {
			src = ref(owner, st.Identifier)
			break
		}
	}
	if len(owners) == 0 {
		// Stored (its author's latest), but another maintainer's state
		// sorts after it (a late or same-second higher-id state).
		o.log.Debug("stored state is not authoritative for any repo here", "id", evt.ID, "repo", ref(evt.PubKey, st.Identifier).URLPath())
		return
	}
	if src.IsZero() {
		o.log.Warn("state objects not found in any repo", "id", evt.ID, "repo", ref(evt.PubKey, st.Identifier).URLPath())
		return
	}
	if err := o.repos.Align(o.ctx, src, refs, head); err != nil {
		o.log.Error("align repo to state", "repo", src.URLPath(), "error", err)
		return
	}
	o.propagate(src, refs, head, owners)
	for _, owner := range all {
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
		o.log.Error("align fetched repo to its state", "repo", r.URLPath(), "error", err)
	}
}

// following keeps the owners whose authoritative stored state does not
// sort after the state (createdAt, id) (nip34.Later): a stored state that
// is its author's latest is not necessarily its repositories' latest — a
// co-maintainer's later state, or a same-second one with a lower id, keeps
// the repository where it is (maintainers-v3.md §4.3).
func (v *view) following(owners []string, createdAt int64, id string) []string {
	var out []string
	for _, owner := range owners {
		if cur, ok := v.latest(owner); ok && cur.EventID != id && nip34.Later(cur.CreatedAt, cur.EventID, createdAt, id) {
			continue
		}
		out = append(out, owner)
	}
	return out
}
