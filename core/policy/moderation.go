package policy

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// moderation decides a moderation label (issue 25 part 2,
// nip34.ParseModeration): well formed, and signed by a confirmed maintainer
// or a moderator of the repository it names (nip34.Roster.Moderates, the
// current v3 roster); anyone else's is refused with restricted:, so that no
// client or peer reading this relay mistakes it for the repository's. What
// it hides is decided when events are read (core/visibility), only for
// events that belong to that repository. The reference rule then applies
// as to any label (the repository must be accepted here).
func (r *Rules) moderation(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	m, err := nip34.ParseModeration(evt)
	if err != nil {
		return reject("invalid: moderation label: %v", err)
	}
	v := r.view(ctx, m.Repo.Identifier, "")
	if err := v.Err(); err != nil {
		return r.internal("load repository announcements", evt, err)
	}
	if !v.Roster(m.Repo.Pubkey).Moderates(evt.PubKey) {
		return reject("restricted: a moderation label counts only from a confirmed maintainer or moderator of %s", m.Repo.String())
	}
	return r.related(ctx, evt, meta)
}
