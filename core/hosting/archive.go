package hosting

import (
	"context"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/nip34"
)

// archived is the archive scope's verdict on owner's latest announcement of
// the view's identifier (core/archive decides; false without one).
func (v *view) archived(scope *archive.Scope, owner string) bool {
	if !scope.Enabled() {
		return false
	}
	e, ok := v.rv.Latest(owner)
	if !ok {
		return false
	}
	return scope.Decide(e.Announcement, func(pk string) (nip34.Announcement, bool) {
		o, ok := v.rv.Latest(pk)
		return o.Announcement, ok
	}) == archive.Archived
}

// ReadOnly answers githttp.Options.ReadOnly: why a push to repo is refused
// because it is a read-only GRASP-05 archive, "" when it is not.
func (h *Hosting) ReadOnly(ctx context.Context, repo nip34.RepoRef) string {
	if !h.archive.ReadOnly() {
		return ""
	}
	if !h.begin(ctx).view(repo.Identifier).archived(h.archive, repo.Pubkey) {
		return ""
	}
	h.archive.Refused(archive.RefusedReadOnly)
	return archive.ReadOnlyMessage(repo)
}

// CountArchived sets grasp_archive_repos (a scheduled loop with archive
// mode on): the hosted repositories archive mode took, by whether their
// announcement still waits in purgatory for git data.
func (h *Hosting) CountArchived(ctx context.Context) error {
	if !h.archive.Enabled() {
		return nil
	}
	repos, err := h.repos.List(ctx)
	if err != nil {
		return err
	}
	o := h.begin(ctx)
	counts := map[string]int{}
	for i, r := range repos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i%256 == 0 {
			o = h.begin(ctx) // bound what one operation keeps
		}
		if !o.view(r.Identifier).archived(h.archive, r.Pubkey) {
			continue
		}
		if h.purg.HasAnnouncement(r) {
			counts[archive.StateAwaiting]++
		} else {
			counts[archive.StateMirrored]++
		}
	}
	h.archive.SetRepos(counts)
	return nil
}
