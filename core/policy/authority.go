package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// GitWorkshop v4's vocabulary at acceptance (issue 25 part 1).
//
// Annotations of an issue, patch or PR — statuses (1630–1633), labels and
// subject edits (1985), cover notes (1624) — count only from a key that
// speaks for it: the root's author, a confirmed maintainer or a moderator of
// a repository the root names (nip34.Roster.Speaks, maintainers-v3 §2.5,
// GitWorkshop NIP.md "Authorisation"). Anyone else's is refused with
// restricted: rather than stored beside the authoritative ones: this relay
// is the repository's source of state and conversation for ngit 3 and
// GitWorkshop 4 ("state and conversation come only from relays the
// repository declares"), and a client or a page that does not apply the
// rule itself — or a peer syncing from here — would take a stranger's
// "closed", "wontfix" or renamed subject for the repository's. The rule is
// the current roster's (§2.6); what a key wrote while it was a maintainer
// stays, and a key that becomes one republishes.
//
// A review (7321) is anyone's opinion but must be well formed: what it
// reviews, one of the five verdicts, and q tags naming the reviewer's own
// inline comments. Reviews are regular events; the newest per reviewer
// counts (nip34.CurrentReviews), older ones stay as history.
//
// A pinned-repositories list (10617) may pin only its author's own
// repositories. It and the NIP-51 follow lists (10017, 10018) are a
// participant's personal lists, stored like profiles for the people of
// what is hosted here (GRASP-03 pulls them), or when they name a
// repository or event accepted here.

// maxAnnotatedRoots bounds the roots one annotation's authority is checked
// against.
const maxAnnotatedRoots = 16

// annotation decides the authority of a status, label or cover note; stop
// is false when the ordinary reference rule (related) decides.
func (r *Rules) annotation(ctx context.Context, evt *nostr.Event) (Decision, bool) {
	ids := nip34.AnnotatedRoots(evt)
	if len(ids) == 0 {
		return Decision{}, false
	}
	if len(ids) > maxAnnotatedRoots {
		ids = ids[:maxAnnotatedRoots]
	}
	roots, err := r.stored(ctx, nostr.Filter{IDs: ids})
	if err != nil {
		return r.internal("look up annotated events", evt, err), true
	}
	if len(roots) < len(ids) {
		held, err := r.held(ctx, nostr.Filter{IDs: ids})
		if err != nil {
			return r.internal("look up annotated events", evt, err), true
		}
		roots = append(roots, held...)
	}
	views := map[string]*roster.View{}
	for _, root := range roots {
		if !nip34.IsRootKind(root.Kind) || !slices.Contains(ids, root.ID) {
			continue
		}
		if !r.speaksFor(ctx, views, evt.PubKey, root) {
			return reject("restricted: %s of %s %s counts only from its author, a maintainer or a moderator of its repository", annotationName(evt.Kind), nip34.KindName(root.Kind), root.ID[:12]), true
		}
	}
	for _, v := range views {
		if err := v.Err(); err != nil {
			return r.internal("load repository announcements", evt, err), true
		}
	}
	return Decision{}, false
}

// speaksFor reports whether pk speaks for root: its author, or a key the
// roster of a repository it names lets speak.
func (r *Rules) speaksFor(ctx context.Context, views map[string]*roster.View, pk string, root *nostr.Event) bool {
	if pk == root.PubKey {
		return true
	}
	repos := nip34.ReferencesOf(root).Repos()
	if len(repos) > maxAnnotatedRoots {
		repos = repos[:maxAnnotatedRoots]
	}
	for _, rr := range repos {
		v, ok := views[rr.Identifier]
		if !ok {
			v = r.view(ctx, rr.Identifier, "")
			views[rr.Identifier] = v
		}
		if v.Roster(rr.Pubkey).Speaks(pk, root.PubKey) {
			return true
		}
	}
	return false
}

// review checks a kind-7321 review's shape; stop is false when it is well
// formed and the reference rule decides.
func (r *Rules) review(ctx context.Context, evt *nostr.Event) (Decision, bool) {
	rv, ok := nip34.ParseReview(evt)
	if !ok {
		return reject("invalid: a review (kind 7321) names the PR or patch it reviews in an 'e' tag and one verdict in 's': %s", strings.Join(nip34.ReviewVerdicts, ", ")), true
	}
	if len(rv.Comments) == 0 {
		return Decision{}, false
	}
	ids := rv.Comments
	if len(ids) > queryCap {
		ids = ids[:queryCap]
	}
	quoted, err := r.stored(ctx, nostr.Filter{IDs: ids})
	if err != nil {
		return r.internal("look up the review's comments", evt, err), true
	}
	for _, c := range quoted {
		if c.Kind != nip34.KindComment || c.PubKey != evt.PubKey {
			return reject("invalid: a review's 'q' tags name the reviewer's own inline comments (kind 1111); %s is kind %d by another key", c.ID[:12], c.Kind), true
		}
	}
	return Decision{}, false
}

// personalList decides a 10617, 10017 or 10018: a pin of another key's
// repository is refused; otherwise stored for a participant (as profiles
// are) or when it names something accepted here.
func (r *Rules) personalList(ctx context.Context, evt *nostr.Event, meta Meta) Decision {
	if evt.Kind == nip34.KindPinnedRepos {
		if foreign := nip34.ForeignPins(evt); len(foreign) > 0 {
			return reject("invalid: a pinned-repositories list (kind 10617) pins only its author's own repositories (30617:%s:<d>); %q is not one", evt.PubKey, foreign[0])
		}
	}
	if d := r.profile(ctx, evt); d.Outcome != Rejected {
		return d
	}
	return r.related(ctx, evt, meta)
}

func annotationName(kind int) string {
	switch {
	case nip34.IsStatusKind(kind):
		return fmt.Sprintf("a status (kind %d)", kind)
	case kind == nip34.KindLabel:
		return "a label or subject edit (kind 1985)"
	case kind == nip34.KindCoverNote:
		return "a cover note (kind 1624)"
	}
	return fmt.Sprintf("kind %d", kind)
}
