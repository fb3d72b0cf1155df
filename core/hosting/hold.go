package hosting

import (
	"context"
	"errors"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/outcome"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// Hold keeps evt in purgatory as d says (relay.Effects): what it waits for
// comes from d's effects. A held announcement's bare repo is created at
// once, and a held PR settles the refs/nostr placeholders pushed before it.
// msg is the OK text.
func (h *Hosting) Hold(ctx context.Context, evt *nostr.Event, d policy.Decision, meta policy.Meta) (string, error) {
	o := h.begin(ctx)
	entry := purgatory.Entry{Event: evt}
	createRepo := false
	for _, e := range d.Effects {
		switch e.Kind {
		case policy.CreateRepo:
			createRepo = true
			entry.Repo = e.Repo
		case policy.ReplaceHeld:
			entry.Repo = e.Repo
		case policy.AwaitGitData:
			if entry.Repo.IsZero() {
				entry.Repo = e.Repo
				entry.Needs = append(entry.Needs, e.OIDs...)
			} else if e.Repo != entry.Repo {
				entry.Also = append(entry.Also, e.Repo)
			}
		case policy.AwaitRepo:
			entry.Repo = e.Repo
			entry.WithRepo = true
		case policy.AwaitEvent:
			entry.AwaitEvent = e.EventID
			if entry.Repo.IsZero() {
				entry.Repo = e.Repo
			}
		}
	}
	if entry.Repo.IsZero() && evt.Kind == nip34.KindAnnouncement {
		entry.Repo = ref(evt.PubKey, evt.Tags.GetD())
	}
	switch meta.Source {
	case policy.SourceClient:
		entry.Remote = meta.Remote
	case policy.SourceSync:
		// counted against the relay it came from (F26)
		entry.Relay = meta.Remote
	}
	entry.Invited = d.Invited
	if err := h.purg.Hold(ctx, entry); err != nil {
		if errors.Is(err, purgatory.ErrDuplicate) {
			return policy.MsgInPurgatory, nil
		}
		var quota *purgatory.QuotaError
		if errors.As(err, &quota) {
			return "", &policy.Refusal{Msg: quota.Msg}
		}
		return "", outcome.Errorf(outcome.Error, "could not hold event: %w", err)
	}
	if notable(evt.Kind) {
		h.log.Info(nip34.KindName(evt.Kind)+" held until its git data arrives", "id", evt.ID, "repo", entry.Repo.URLPath(), "source", string(meta.Source))
	}
	if createRepo {
		// The bare repo must exist before the OK is written: ngit init
		// polls info/refs right after publishing the announcement
		// (grasp.md §7.1), and gitworkshop pushes right after the OK with
		// no poll at all (field-2026-09.md §3.5). One that cannot be made
		// is not kept either, and the client is told: an OK true always
		// means the repository answers git (issue 10 part 4).
		if err := h.repos.Create(ctx, entry.Repo); err != nil {
			h.log.Error("create bare repo; the announcement is refused", "repo", entry.Repo.URLPath(), "error", err)
			if _, rerr := h.purg.Remove(ctx, evt.ID, "evicted"); rerr != nil {
				h.log.Error("dropping the held announcement whose repo could not be made", "id", evt.ID, "error", rerr)
			}
			return "", &policy.Refusal{Msg: "error: could not create the repository here; try again later"}
		}
		if d.Archived {
			h.log.Info("repository archived (GRASP-05): created, its git data is fetched from the servers its announcement lists", "repo", entry.Repo.URLPath(), "source", string(meta.Source))
		} else {
			h.log.Info("repository created", "repo", entry.Repo.URLPath())
		}
		// The data may already be here: the repo was announced before, or
		// another maintainer's copy holds the latest state. Then the
		// announcement need not wait for a push; this runs after the OK.
		r := entry.Repo
		h.spawn(func(ctx context.Context) { h.begin(ctx).adopt(r) })
	}
	// A re-checked state was refused when it came (its announcement came
	// after it, as a bulk sync often delivers them, GRASP-05 archives
	// above all): no push can have brought its data meanwhile, so it is
	// hunted at once like a synced one, not after the client's grace.
	o.hunt(entry, meta.Source == policy.SourceSync || meta.Source == policy.SourceRecheck)
	if evt.Kind == nip34.KindAnnouncement {
		o.recheckRejected(evt.Tags.GetD())
	}
	if evt.Kind == nip34.KindPR || evt.Kind == nip34.KindPRUpdate {
		o.settlePlaceholders(evt, "")
	}
	if d.Msg != "" {
		return d.Msg, nil // the rules' text (core/policy owns them all)
	}
	return policy.MsgPurgatory, nil
}
