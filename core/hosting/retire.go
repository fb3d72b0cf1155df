package hosting

import (
	"context"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// retire removes a bare repo that is no longer announced here. Only repos
// without refs are removed; a repo with data is kept for the operator
// (grasp.md §9.4 asks for archival, not deletion, of such data).
func (o *op) retire(r nip34.RepoRef, why string) {
	if !o.repos.Exists(r) {
		return
	}
	refs, err := o.repos.Refs(o.ctx, r)
	if err != nil {
		o.log.Error("read refs before retiring repo", "repo", r.URLPath(), "error", err)
		return
	}
	if len(refs) > 0 {
		o.log.Info("repo no longer announced here; keeping its git data", "repo", r.URLPath(), "why", why)
		return
	}
	if err := o.repos.Delete(o.ctx, r); err != nil {
		o.log.Error("remove bare repo", "repo", r.URLPath(), "error", err)
		return
	}
	o.log.Info("removed empty bare repo", "repo", r.URLPath(), "why", why)
}

// evict drops the held announcement of r (its replacement no longer lists
// this server) and retires r's empty repo.
func (o *op) evict(r nip34.RepoRef) {
	for _, e := range o.purg.HeldAnnouncements(r) {
		if _, err := o.purg.Remove(o.ctx, e.Event.ID, "evicted"); err != nil {
			o.log.Error("evict held announcement", "repo", r.URLPath(), "error", err)
		}
	}
	o.retire(r, "held announcement evicted")
}

// Evict removes the held events keep selects, for the operator (a NIP-86
// ban, issue 25 part 3): each leaves purgatory as "evicted", and the empty
// bare repo a held announcement created when it was held (hold.go) is
// retired, as when it expires. It returns how many left.
func (h *Hosting) Evict(ctx context.Context, keep func(e *purgatory.Entry) bool, why string) int {
	o := h.begin(ctx)
	n := 0
	for _, e := range h.purg.Find(keep) {
		ok, err := h.purg.Remove(ctx, e.Event.ID, "evicted")
		if err != nil {
			h.log.Error("evict a held event", "id", e.Event.ID, "why", why, "error", err)
			continue
		}
		if ok {
			n++
		}
		if h.hunter != nil {
			h.hunter.ForgetEvent(e.Repo, e.Event.ID)
		}
		if e.Event.Kind != nip34.KindAnnouncement {
			continue
		}
		// an older version stored (or another held) still announces it
		if _, announced := h.begin(ctx).view(e.Repo.Identifier).rv.Latest(e.Repo.Pubkey); !announced {
			o.retire(e.Repo, why)
		}
	}
	return n
}
