package hosting

import "github.com/grasp-dev/grasp/core/nip34"

// propagate brings the repos of owners hosted here (other than from's) to
// refs and head, sharing from's objects (G01-G4 part 3).
func (o *op) propagate(from nip34.RepoRef, refs map[string]string, head string, owners []string) {
	var to []nip34.RepoRef
	for _, owner := range owners {
		if r := ref(owner, from.Identifier); r != from && o.repos.Exists(r) {
			to = append(to, r)
		}
	}
	if len(to) == 0 {
		return
	}
	if err := o.repos.Propagate(o.ctx, from, to, refs, head); err != nil {
		o.log.Error("propagate state to maintainers' repos", "from", from.String(), "error", err)
	}
}
