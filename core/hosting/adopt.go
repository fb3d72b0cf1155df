package hosting

import (
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// adopt brings a newly announced repo to the latest authoritative state when
// the data is already on this server — in the repo itself (announced again)
// or in another maintainer's copy (objects shared through alternates) —
// and releases what that makes servable (G01-G4 part 3 for maintainers who
// announce after the push).
func (o *op) adopt(r nip34.RepoRef) {
	v := o.view(r.Identifier)
	st, ok := v.latest(r.Pubkey)
	if !ok {
		return
	}
	oids := values(st.Refs)
	if o.has(r, oids) {
		o.alignLatest(r)
		o.release(r)
		return
	}
	for _, owner := range v.owners(st.Author) {
		src := ref(owner, r.Identifier)
		if src == r || !o.repos.Exists(src) || !o.has(src, oids) {
			continue
		}
		// Borrow only from a repo whose owner r's owner trusts (F01).
		t := git.Target{Repo: r, Borrow: v.maintainers(r.Pubkey)[src.Pubkey]}
		if err := o.repos.Propagate(o.ctx, src, []git.Target{t}, st.Refs, st.HEAD); err != nil {
			o.log.Error("bring a newly announced repo to its state", "repo", r.URLPath(), "from", src.URLPath(), "error", err)
			return
		}
		o.release(r)
		return
	}
}
