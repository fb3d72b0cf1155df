package hosting

import (
	"context"
	"errors"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
)

// GRASP-06 /prs/ data is anonymous storage (audit 2026-11b, F20):
// purgatory counts it per client address, per npub and in total
// (purgatory.PRsQuotas) from the push that brings it until the repository
// is removed, and a repository whose data is neither used nor merged for
// Options.PRsTTL is removed here.

// ReservePRs is githttp.PRsQuota: purgatory counts /prs/ data, on disk and in
// flight.
func (h *Hosting) ReservePRs(repo nip34.RepoRef, ip string, expect int64) (githttp.PRsReservation, error) {
	rv, err := h.purg.ReservePRs(repo, ip, expect)
	if err != nil {
		return nil, err
	}
	return rv, nil
}

// expirePRs removes the /prs/ repositories whose last push or PR event is
// older than the PRs TTL and whose PRs are not merged (kept: prsKept), and
// frees what they were charged; records of repositories already gone are
// dropped.
func (h *Hosting) expirePRs(ctx context.Context) {
	now := h.clk.Now()
	for _, d := range h.purg.PRsRecords() {
		if ctx.Err() != nil {
			return
		}
		if !h.repos.Exists(d.Repo) {
			// removed meanwhile: a push that created it failed (G06-8)
			h.dropPRs(ctx, d.Repo)
			continue
		}
		if h.prsTTL <= 0 || now.Sub(d.Active) < h.prsTTL {
			continue
		}
		if h.prsKept(ctx, d.Repo) {
			if err := h.purg.TouchPRs(ctx, d.Repo); err != nil {
				h.log.Error("keep /prs/ data whose PR is merged", "repo", d.Repo.URLPath(), "error", err)
			}
			h.log.Info("/prs/ data kept past its TTL: its PR is merged or mirrored into a repository hosted here", "repo", d.Repo.URLPath())
			continue
		}
		removed, err := h.repos.RemovePRs(ctx, d.Repo)
		switch {
		case err != nil:
			h.log.Warn("remove an expired /prs/ repository", "repo", d.Repo.URLPath(), "error", err)
			continue
		case !removed:
			continue // a push is writing into it: it is used
		}
		h.dropPRs(ctx, d.Repo)
		h.prsEvents.WithLabelValues("expired").Inc()
		h.log.Info("/prs/ repository removed: its data was not used or merged within the TTL", "repo", d.Repo.URLPath(),
			"bytes", d.Total(), "last_used", d.Active, "ttl", h.prsTTL)
	}
}

// dropPRs frees what the removed /prs/ repository r was charged.
func (h *Hosting) dropPRs(ctx context.Context, r nip34.RepoRef) {
	if err := h.purg.DropPRs(ctx, r); err != nil {
		h.log.Error("free the /prs/ quota of a removed repository", "repo", r.URLPath(), "error", err)
	}
}

// prsKept reports whether a PR of the /prs/ repository r is merged: the
// commit of one of its refs/nostr/<id> is in a repository hosted here that
// the PR's `a` tags name (merged there, or mirrored there by G06-7). Its
// data then lives on with that repository's history.
func (h *Hosting) prsKept(ctx context.Context, r nip34.RepoRef) bool {
	refs, err := h.repos.Refs(ctx, r)
	if err != nil {
		return false
	}
	for ref, tip := range refs {
		id, ok := strings.CutPrefix(ref, "refs/nostr/")
		if !ok {
			continue
		}
		pr, ok := h.knownPR(ctx, id)
		if !ok {
			continue
		}
		for _, a := range pr.Repos {
			if a.PRs || !h.repos.Exists(a) {
				continue
			}
			if m, err := h.repos.HasObjects(ctx, a, []string{tip}); err == nil && m[tip] {
				return true
			}
		}
	}
	return false
}

// adoptPRs charges a /prs/ repository found on disk without a record its
// size (start-up: a crash between a push and its record, or data pushed
// before the /prs/ quotas).
func (h *Hosting) adoptPRs(ctx context.Context, r nip34.RepoRef) {
	n, err := h.repos.DiskBytes(r)
	if errors.Is(err, git.ErrNotFound) {
		return
	}
	if err != nil {
		h.log.Warn("measure a /prs/ repository", "repo", r.URLPath(), "error", err)
	}
	if err := h.purg.AdoptPRs(ctx, r, n); err != nil {
		h.log.Error("charge a /prs/ repository found on disk", "repo", r.URLPath(), "error", err)
	}
}
