package hosting

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/nip34"
)

// States is githttp.Authority: the states authoritative for repo, from
// purgatory and from the store.
func (h *Hosting) States(ctx context.Context, repo nip34.RepoRef) ([]githttp.StateCandidate, error) {
	return h.begin(ctx).view(repo.Identifier).states(repo.Pubkey), nil
}

// PRTip is githttp.Authority: the `c` of a known PR or PR update.
func (h *Hosting) PRTip(ctx context.Context, id string) (string, bool, error) {
	pr, ok := h.knownPR(ctx, id)
	if !ok {
		return "", false, nil
	}
	return pr.Tip, true, nil
}

// knownPR is the PR or PR update id, held or stored, parsed; ok is false
// when there is none (unknown id, another kind, unparsable).
func (h *Hosting) knownPR(ctx context.Context, id string) (nip34.PR, bool) {
	var evt *nostr.Event
	if e, ok := h.purg.Get(id); ok {
		evt = e.Event
	} else if evs := h.query(ctx, nostr.Filter{IDs: []string{id}}); len(evs) > 0 {
		evt = evs[0]
	}
	if evt == nil || (evt.Kind != nip34.KindPR && evt.Kind != nip34.KindPRUpdate) {
		return nip34.PR{}, false
	}
	pr, err := nip34.ParsePR(evt)
	return pr, err == nil
}
