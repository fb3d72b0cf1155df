package policy

import (
	"context"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nocontent"
	"github.com/grasp-dev/grasp/core/roster"
	"github.com/nbd-wtf/go-nostr"
)

// maxFrontier bounds how many events one level of the reference search
// follows; together with the depth it bounds the work per event.
const maxFrontier = 64

// anchorKind reports whether a stored event of this kind anchors others:
// announcements and root events (issues, patches, PRs, PR updates).
func anchorKind(kind int) bool {
	return kind == nip34.KindAnnouncement || nip34.IsRootKind(kind)
}

// related applies G01-R4 to every other kind: the event must tag (a/A/q,
// e/E/q), or be tagged by, an accepted repository or root event. Issues,
// patches and statuses must do so directly; other events may be up to
// MaxReferenceDepth steps away, each step through a stored event, so one
// accepted event does not open an unbounded chain (grasp.md §10.7).
//
// An event whose only anchor is in purgatory (an issue for a repository
// whose announcement awaits its first push, a comment on a held PR) is
// held and released with it, rather than refused as ngit-grasp does
// (G01-R4x).
func (r *Rules) related(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	depth := r.depth
	switch {
	case evt.Kind == nip34.KindIssue, evt.Kind == nip34.KindPatch:
		depth = 1
	case nip34.IsStatusKind(evt.Kind):
		if _, err := nip34.ParseStatus(evt); err != nil {
			return reject("invalid: %v", err)
		}
		depth = 1
	}
	views := map[string]*roster.View{}
	view := func(d string) *roster.View {
		if v, ok := views[d]; ok {
			return v
		}
		v := r.view(ctx, d, "")
		views[d] = v
		return v
	}

	var heldAnchor *Effect
	visited := map[string]bool{evt.ID: true}
	frontier := []*nostr.Event{evt}
	for level := 1; level <= depth && len(frontier) > 0; level++ {
		var ids []string
		repos := map[nip34.RepoRef]bool{}
		for _, e := range frontier {
			refs := nip34.ReferencesOf(e)
			for _, rr := range refs.Repos() {
				repos[rr] = true
			}
			for _, id := range refs.EventIDs {
				if !visited[id] && len(ids) < maxFrontier {
					ids = append(ids, id)
				}
			}
		}
		// Tags an accepted repository?
		for rr := range repos {
			if len(views) >= 16 {
				break
			}
			v := view(rr.Identifier)
			own, ok := v.Latest(rr.Pubkey)
			if err := v.Err(); err != nil {
				return r.internal("load repository announcements", evt, err)
			}
			if !ok || r.repoBlack.match(rr.Pubkey, rr.Identifier) {
				continue
			}
			if !own.Held {
				return Decision{Outcome: Store}
			}
			if level == 1 && heldAnchor == nil {
				heldAnchor = &Effect{Kind: AwaitRepo, Repo: rr}
			}
		}
		var next []*nostr.Event
		// Tags an accepted event?
		if len(ids) > 0 {
			// The ids the GRASP-08 record looks up too: one lookup for both
			// (nocontent.ByID under the relay's nocontent.Shared).
			out, err := nocontent.ByID(ctx, r.events, ids, queryCap)
			if err != nil {
				return r.internal("look up referenced events", evt, err)
			}
			for _, e := range out {
				if anchorKind(e.Kind) {
					return Decision{Outcome: Store}
				}
				if !visited[e.ID] {
					visited[e.ID] = true
					next = append(next, e)
				}
			}
			if level == 1 && heldAnchor == nil && !meta.isRelease() {
				hd, err := r.held(ctx, nostr.Filter{IDs: ids})
				if err != nil {
					return r.internal("look up referenced events", evt, err)
				}
				for _, e := range hd {
					if anchorKind(e.Kind) {
						heldAnchor = &Effect{Kind: AwaitEvent, EventID: e.ID}
						break
					}
				}
			}
		}
		// Tagged by an accepted event? (a forward reference: the issue that
		// quotes this note was accepted first)
		var fids []string
		for _, e := range frontier {
			if len(fids) < maxFrontier {
				fids = append(fids, e.ID)
			}
		}
		for _, tag := range []string{"e", "E", "q"} {
			in, err := r.stored(ctx, nostr.Filter{Tags: nostr.TagMap{tag: fids}, Limit: maxFrontier})
			if err != nil {
				return r.internal("look up referencing events", evt, err)
			}
			for _, e := range in {
				if anchorKind(e.Kind) {
					return Decision{Outcome: Store}
				}
				if !visited[e.ID] && len(next) < maxFrontier {
					visited[e.ID] = true
					next = append(next, e)
				}
			}
		}
		frontier = next
	}
	if heldAnchor != nil {
		return hold(*heldAnchor)
	}
	return reject("invalid: %s", orphanReason(evt.Kind))
}

func orphanReason(kind int) string {
	switch {
	case kind == nip34.KindIssue || kind == nip34.KindPatch:
		return "event must tag a repository accepted on this service with an 'a' tag (30617:<owner hex>:<identifier>)"
	case nip34.IsStatusKind(kind):
		return "status must tag an issue, patch or PR accepted on this service with an 'e' tag"
	}
	return "event must tag (a/A/q/e/E), or be tagged by, a repository, issue, patch or PR accepted on this service"
}

func (m Meta) isRelease() bool { return m.Source == SourcePurgatory }
