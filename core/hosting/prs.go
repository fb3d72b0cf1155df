package hosting

import (
	"context"
	"fmt"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// GRASP-06 effects: a PR released through /prs/<signer>/<d>.git has its ref
// there and a copy in every repository of its `a` tags with that d hosted
// here (G06-7, no reverse mirror, no back-fill); /prs/ repositories left
// without a ref are removed (G06-8). Which /prs/ repository a PR belongs to
// is nip34.Service.PRsTarget's decision.

// PRMisfit is githttp.PRsHost: why the known PR event id may not be pushed to
// the /prs/ repository repo (G06-6).
func (h *Hosting) PRMisfit(ctx context.Context, repo nip34.RepoRef, id string) (string, error) {
	pr, ok := h.knownPR(ctx, id)
	if !ok {
		return "", nil
	}
	switch target, ok := h.service.PRsTarget(pr); {
	case pr.Pubkey != repo.Pubkey:
		return fmt.Sprintf("PR event %s is signed by %s, not by the owner of this /prs/ path; push it to %s", id, nip34.Npub(pr.Pubkey), h.prsURL(pr)), nil
	case !ok:
		return fmt.Sprintf("PR event %s has no 'clone' tag naming %s with the 'd' of one of its 'a' tags", id, h.service.PRsURL(repo.Pubkey, repo.Identifier)), nil
	case target != repo:
		return fmt.Sprintf("PR event %s names %s, not this /prs/ path", id, h.service.BaseURL()+target.URLPath()), nil
	}
	return "", nil
}

// prsURL is where pr's /prs/ push goes, for an error text.
func (h *Hosting) prsURL(pr nip34.PR) string {
	if t, ok := h.service.PRsTarget(pr); ok {
		return h.service.BaseURL() + t.URLPath()
	}
	if len(pr.Repos) > 0 {
		return h.service.PRsURL(pr.Pubkey, pr.Repos[0].Identifier)
	}
	return h.service.BaseURL() + "/prs/"
}

// bindPRs points refs/nostr/<id> of the /prs/ repository prs at tip and
// mirrors it into the repositories of evt's `a` tags with prs's identifier
// that are hosted here (G06-7).
func (o *op) bindPRs(prs nip34.RepoRef, evt *nostr.Event, tip string) {
	if !o.has(prs, []string{tip}) {
		return
	}
	ref := "refs/nostr/" + evt.ID
	if err := o.repos.SetRef(o.ctx, prs, ref, tip, ""); err != nil {
		o.log.Warn("bind refs/nostr in /prs/", "id", evt.ID, "repo", prs.URLPath(), "error", err)
		return
	}
	// a served PR uses its data: its expiry starts again (F20)
	if err := o.purg.TouchPRs(o.ctx, prs); err != nil {
		o.log.Error("record a use of /prs/ data", "repo", prs.URLPath(), "error", err)
	}
	o.prsEvents.WithLabelValues("released").Inc()
	o.log.Info("/prs/ PR served with its ref", "id", evt.ID, "repo", prs.URLPath(), "tip", tip)
	pr, err := nip34.ParsePR(evt)
	if err != nil {
		return
	}
	for _, a := range pr.Repos {
		if a.Identifier != prs.Identifier || !o.repos.Exists(a) {
			continue
		}
		if err := o.repos.CopyRef(o.ctx, prs, a, ref, tip); err != nil {
			o.log.Warn("mirror a /prs/ PR into the owner's repository", "id", evt.ID, "repo", a.URLPath(), "error", err)
			continue
		}
		o.prsEvents.WithLabelValues("mirrored").Inc()
		o.log.Info("/prs/ PR mirrored into the owner's repository", "id", evt.ID, "repo", a.URLPath(), "tip", tip)
	}
}

// removeIfEmptyPRs removes a /prs/ repository left without a ref (G06-8)
// and reports whether it did.
func (h *Hosting) removeIfEmptyPRs(ctx context.Context, r nip34.RepoRef, why string) bool {
	removed, err := h.repos.RemoveIfEmpty(ctx, r)
	if err != nil {
		h.log.Warn("remove a /prs/ repository without refs", "repo", r.URLPath(), "error", err)
		return false
	}
	if removed {
		h.dropPRs(ctx, r)
		h.prsEvents.WithLabelValues("removed").Inc()
		h.log.Info("/prs/ repository without refs removed", "repo", r.URLPath(), "why", why)
	}
	return removed
}

// ScanPRs removes the /prs/ repositories without a ref (G06-8, at
// start-up: a crash between creating one and its push leaves it empty),
// charges the others the /prs/ quotas if they have no record (F20), and
// drops the records of repositories no longer on disk.
func (h *Hosting) ScanPRs(ctx context.Context) error {
	repos, err := h.repos.ListPRs(ctx)
	if err != nil {
		return err
	}
	for _, r := range repos {
		if !h.removeIfEmptyPRs(ctx, r, "start-up scan") {
			h.adoptPRs(ctx, r)
		}
	}
	for _, d := range h.purg.PRsRecords() {
		if !h.repos.Exists(d.Repo) {
			h.dropPRs(ctx, d.Repo)
		}
	}
	return nil
}
