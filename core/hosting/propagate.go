package hosting

import (
	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// propagate brings the repos of owners hosted here (other than from's) to
// refs and head (G01-G4 part 3). A repo borrows from's objects only when
// from's owner is one of its own confirmed maintainers; otherwise it gets a
// copy (F01).
func (o *op) propagate(from nip34.RepoRef, refs map[string]string, head string, owners []string) {
	var to []git.Target
	v := o.view(from.Identifier)
	for _, owner := range owners {
		if r := ref(owner, from.Identifier); r != from && o.repos.Exists(r) {
			to = append(to, git.Target{Repo: r, Borrow: v.maintainers(owner)[from.Pubkey]})
		}
	}
	if len(to) == 0 {
		return
	}
	if err := o.repos.Propagate(o.ctx, from, to, refs, head); err != nil {
		o.log.Error("propagate state to maintainers' repos", "from", from.URLPath(), "error", err)
	}
}
