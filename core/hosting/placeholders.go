package hosting

import (
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// settlePlaceholders resolves refs pushed git-first for PR evt: a ref at the
// PR's tip is kept (bound), a ref at another commit is deleted (G01-G5c).
// tip "" means the tip is not present (the PR is held): every placeholder
// ref that does not point at the PR's `c` is deleted.
func (o *op) settlePlaceholders(evt *nostr.Event, tip string) {
	phs, err := o.purg.TakePlaceholders(o.ctx, evt.ID)
	if err != nil {
		o.log.Error("take placeholders", "id", evt.ID, "error", err)
		return
	}
	want := tip
	if want == "" {
		if pr, err := nip34.ParsePR(evt); err == nil {
			want = pr.Tip
		}
	}
	for _, ph := range phs {
		if ph.Commit == want {
			continue
		}
		if err := o.repos.DeleteRef(o.ctx, ph.Repo, "refs/nostr/"+evt.ID, ph.Commit); err != nil {
			o.log.Warn("delete refs/nostr placeholder at the wrong tip", "id", evt.ID, "error", err)
			continue
		}
		if ph.Repo.PRs {
			// G06-6: the event stays held; the repository goes with its
			// last ref (G06-8)
			o.log.Info("/prs/ ref at another commit than its PR event's deleted", "id", evt.ID, "repo", ph.Repo.URLPath(), "pushed", ph.Commit, "want", want)
			if o.removeIfEmptyPRs(o.ctx, ph.Repo, "tip mismatch") {
				continue
			}
		}
		// its data must go too, or a PR event naming another commit would
		// free the placeholder's quota and keep its bytes (F02)
		o.schedulePrune(o.ctx, ph.Repo)
	}
}

// bindNostrRef points refs/nostr/<id> at tip in every repo of the PR's
// repository (the announced repo and its maintainers' repos here) that has
// the commit (G01-G5); for a /prs/ repository, there and in its mirrors
// (bindPRs).
func (o *op) bindNostrRef(repo nip34.RepoRef, evt *nostr.Event, tip string) {
	id := evt.ID
	if repo.PRs {
		o.bindPRs(repo, evt, tip)
		return
	}
	for _, owner := range o.view(repo.Identifier).owners(repo.Pubkey) {
		r := ref(owner, repo.Identifier)
		if !o.has(r, []string{tip}) {
			continue
		}
		if err := o.repos.SetRef(o.ctx, r, "refs/nostr/"+id, tip, ""); err != nil {
			o.log.Warn("bind refs/nostr", "id", id, "repo", r.URLPath(), "error", err)
		}
	}
}
