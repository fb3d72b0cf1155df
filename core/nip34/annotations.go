package nip34

import (
	"slices"
	"sort"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// What GitWorkshop v4 adds around an issue, patch or PR after the fact
// (its NIP.md, "Shared Issue / Patch / PR Metadata" and "Pull Request
// Reviews"): labels and subject edits (kind 1985), cover notes (1624) and
// reviews (7321). The events are regular and immutable; what they mean is
// derived here, once, from the events that count.

// Label namespaces GitWorkshop uses on kind 1985.
const (
	LabelNamespaceTopic   = "#t"
	LabelNamespaceSubject = "#subject"
)

// Review verdicts (the `s` tag of a 7321), case-sensitive.
var ReviewVerdicts = []string{"ACK", "NACK", "Concept ACK", "Concept NACK", "Changes Required"}

// Speaks reports whether pk's statuses, labels, subject edits and cover
// notes about a root written by rootAuthor count: the root's author, a
// confirmed maintainer, or a moderator (NIP-34 statuses; maintainers-v3.md
// §2.5; GitWorkshop's "Authorisation"). Everyone else's are ignored.
func (r Roster) Speaks(pk, rootAuthor string) bool {
	return pk == rootAuthor || r.Has(pk) || r.Moderators[pk]
}

// Label is a NIP-32 kind-1985 label event about issues, patches or PRs.
type Label struct {
	EventID string
	Pubkey  string
	Roots   []string // `e` ids marked "root" (all `e` ids if none is marked)
	// Values are the `l` values by namespace (an `l` without a namespace
	// is in "ugc", NIP-32).
	Values map[string][]string
}

// ParseLabel reads a kind-1985 event; a label naming no event is an error.
func ParseLabel(evt *nostr.Event) (Label, bool) {
	if evt.Kind != KindLabel {
		return Label{}, false
	}
	l := Label{EventID: evt.ID, Pubkey: evt.PubKey, Roots: rootIDs(evt.Tags), Values: map[string][]string{}}
	for _, t := range evt.Tags {
		if len(t) < 2 || t[0] != "l" {
			continue
		}
		v, ns := strings.TrimSpace(t[1]), "ugc"
		if len(t) >= 3 {
			ns = t[2]
		}
		if v != "" && !slices.Contains(l.Values[ns], v) {
			l.Values[ns] = append(l.Values[ns], v)
		}
	}
	return l, len(l.Roots) > 0
}

// Labels are the effective labels and subject of root: the union of its
// own `t` tags and the "#t" values of the label events about it whose
// author speaks for it (Roster.Speaks), de-duplicated and sorted; the
// subject is the latest (Later) such "#subject" value, else root's
// `subject` tag. Renames are the authorised subject edits, oldest first,
// for a history.
func Labels(root *nostr.Event, r Roster, labels []*nostr.Event) (tags []string, subject string, renames []*nostr.Event) {
	seen := map[string]bool{}
	add := func(v string) {
		if v = strings.TrimSpace(v); v != "" && !seen[v] {
			seen[v] = true
			tags = append(tags, v)
		}
	}
	for _, v := range firstValues(root.Tags, "t") {
		if root.Kind == KindPatch && (v == "root" || v == "root-revision") {
			continue // a patch's place in its series, not a label
		}
		add(v)
	}
	subject = firstValue(root.Tags, "subject")
	var latest *nostr.Event
	for _, evt := range labels {
		if !r.Speaks(evt.PubKey, root.PubKey) {
			continue
		}
		l, ok := ParseLabel(evt)
		if !ok || !slices.Contains(l.Roots, root.ID) {
			continue
		}
		for _, v := range l.Values[LabelNamespaceTopic] {
			add(v)
		}
		if len(l.Values[LabelNamespaceSubject]) > 0 {
			renames = append(renames, evt)
			if latest == nil || LaterEvent(evt, latest) {
				latest = evt
			}
		}
	}
	if latest != nil {
		l, _ := ParseLabel(latest)
		subject = l.Values[LabelNamespaceSubject][0]
	}
	sort.Strings(tags)
	sort.Slice(renames, func(i, j int) bool { return LaterEvent(renames[j], renames[i]) })
	return tags, subject, renames
}

// CurrentCoverNote is the cover note shown above root: the latest (Later)
// kind-1624 event naming it by `e` whose author speaks for it; nil when
// there is none.
func CurrentCoverNote(rootID, rootAuthor string, r Roster, notes []*nostr.Event) *nostr.Event {
	var best *nostr.Event
	for _, evt := range notes {
		if evt.Kind != KindCoverNote || !r.Speaks(evt.PubKey, rootAuthor) || !slices.Contains(rootIDs(evt.Tags), rootID) {
			continue
		}
		if best == nil || LaterEvent(evt, best) {
			best = evt
		}
	}
	return best
}

// Review is a kind-7321 PR review.
type Review struct {
	EventID  string
	Pubkey   string
	Roots    []string // `e` ids marked "root" (all `e` ids if none is marked)
	Verdict  string   // one of ReviewVerdicts
	Comments []string // `q` ids: the reviewer's inline comments
}

// ParseReview reads a kind-7321 event: it must name what it reviews and
// carry one of the five verdicts.
func ParseReview(evt *nostr.Event) (Review, bool) {
	if evt.Kind != KindReview {
		return Review{}, false
	}
	rv := Review{EventID: evt.ID, Pubkey: evt.PubKey, Roots: rootIDs(evt.Tags), Verdict: firstValue(evt.Tags, "s"),
		Comments: hexValues(evt.Tags, "q")}
	return rv, len(rv.Roots) > 0 && slices.Contains(ReviewVerdicts, rv.Verdict)
}

// CurrentReviews are the reviews of rootID that count: the latest (Later)
// valid review of each reviewer, anyone may review; oldest first.
func CurrentReviews(rootID string, reviews []*nostr.Event) []*nostr.Event {
	best := map[string]*nostr.Event{}
	for _, evt := range reviews {
		rv, ok := ParseReview(evt)
		if !ok || !slices.Contains(rv.Roots, rootID) {
			continue
		}
		if cur, seen := best[evt.PubKey]; !seen || LaterEvent(evt, cur) {
			best[evt.PubKey] = evt
		}
	}
	out := make([]*nostr.Event, 0, len(best))
	for _, evt := range best {
		out = append(out, evt)
	}
	sort.Slice(out, func(i, j int) bool { return LaterEvent(out[j], out[i]) })
	return out
}

// rootIDs are the `e` ids marked "root", or every `e` id when none is
// marked (the rule statuses follow, ParseStatus).
func rootIDs(tags nostr.Tags) []string {
	var out []string
	for _, t := range tags {
		if len(t) >= 4 && t[0] == "e" && t[3] == "root" && IsHex64(t[1]) && !slices.Contains(out, t[1]) {
			out = append(out, t[1])
		}
	}
	if len(out) == 0 {
		out = hexValues(tags, "e")
	}
	return out
}
