package nip34

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// Moderation by the people who own a repository (issue 25 part 2): a
// confirmed maintainer or a moderator (the v3 `o` role) hides events inside
// the repository — issues, comments, patches, PRs, labels, cover notes,
// reviews — and can show them again.
//
// The event is a NIP-32 label (kind 1985) in its own namespace:
//
//	["L", "#moderation"]
//	["l", "hide", "#moderation"]   (or "show")
//	["e", <id>] ...                the events it hides or shows
//	["a", "30617:<owner>:<d>"]     the repository whose moderators act
//
// Why a label and not the alternatives the issue names: a NIP-09 deletion
// by someone other than the author means "delete" to every relay and client
// that reads it, so a maintainer's would either be ignored (it must be, by
// NIP-09) or destroy another person's event with no way back; a status
// (1630–1633) is about an issue or PR as a whole and has no "hidden"
// meaning, nor a way to name a comment. A label is what GitWorkshop v4
// already publishes for a repository's people to say something about its
// events (its `#t` labels and `#subject` edits on the same kind), it is
// regular (every hide and show stays, the newest counts), names any number
// of events, can be undone by a newer "show" or by its author's NIP-09, and a
// client that does not know the namespace ignores it rather than taking it
// for something else. Nothing is deleted: the events stay stored and are
// read by the repository's maintainers and moderators (and the operator's
// members), who can undo a hide.

// LabelNamespaceModeration is the NIP-32 namespace of moderation labels.
const LabelNamespaceModeration = "#moderation"

// Moderation actions: the `l` value in the moderation namespace.
const (
	ModerationHide = "hide"
	ModerationShow = "show"
)

// MaxModerationTargets bounds the events one moderation label names.
const MaxModerationTargets = 100

// Moderation is a parsed moderation label.
type Moderation struct {
	ID        string
	Pubkey    string
	CreatedAt int64
	Hide      bool // false: show
	Repo      RepoRef
	Targets   []string // `e` ids, each once
}

// IsModeration reports whether evt is a moderation label: kind 1985 with
// the moderation namespace in an `L` tag or an `l` tag's mark. Such an
// event is judged by ParseModeration and the moderation rule, never as an
// ordinary label.
func IsModeration(evt *nostr.Event) bool {
	if evt.Kind != KindLabel {
		return false
	}
	for _, t := range evt.Tags {
		if (len(t) >= 2 && t[0] == "L" && t[1] == LabelNamespaceModeration) ||
			(len(t) >= 3 && t[0] == "l" && t[2] == LabelNamespaceModeration) {
			return true
		}
	}
	return false
}

// ParseModeration reads a moderation label: one action (hide or show) in
// the moderation namespace, one repository (`a` 30617 address) and 1 to
// MaxModerationTargets `e` ids. The error says what is wrong.
func ParseModeration(evt *nostr.Event) (Moderation, error) {
	if !IsModeration(evt) {
		return Moderation{}, errors.New("not a moderation label (kind 1985 in the #moderation namespace)")
	}
	m := Moderation{ID: evt.ID, Pubkey: evt.PubKey, CreatedAt: int64(evt.CreatedAt)}
	var actions []string
	var repos []RepoRef
	namespaced := false
	for _, t := range evt.Tags {
		if len(t) < 2 {
			continue
		}
		switch t[0] {
		case "L":
			namespaced = namespaced || t[1] == LabelNamespaceModeration
		case "l":
			if len(t) >= 3 && t[2] == LabelNamespaceModeration {
				actions = append(actions, t[1])
			}
		case "a":
			a, err := ParseAddress(strings.TrimSpace(t[1]))
			if err != nil || a.Kind != KindAnnouncement || ValidateIdentifier(a.D) != nil {
				return Moderation{}, fmt.Errorf("the 'a' tag %q is not a repository address (30617:<owner>:<d>)", t[1])
			}
			ref := RepoRef{Pubkey: a.Pubkey, Identifier: a.D}
			if len(repos) == 0 || repos[0] != ref {
				repos = append(repos, ref)
			}
		case "e":
			if !IsHex64(t[1]) {
				return Moderation{}, fmt.Errorf("the 'e' tag %q is not an event id", t[1])
			}
			if !slices.Contains(m.Targets, t[1]) {
				m.Targets = append(m.Targets, t[1])
			}
		}
	}
	switch {
	case !namespaced:
		return Moderation{}, fmt.Errorf("an 'L' tag names the %s namespace (NIP-32)", LabelNamespaceModeration)
	case len(actions) != 1 || (actions[0] != ModerationHide && actions[0] != ModerationShow):
		return Moderation{}, fmt.Errorf("one 'l' tag in the %s namespace says %q or %q", LabelNamespaceModeration, ModerationHide, ModerationShow)
	case len(repos) != 1:
		return Moderation{}, errors.New("one 'a' tag names the repository (30617:<owner>:<d>) whose maintainers or moderators act")
	case len(m.Targets) == 0:
		return Moderation{}, errors.New("'e' tags name the events it hides or shows")
	case len(m.Targets) > MaxModerationTargets:
		return Moderation{}, fmt.Errorf("at most %d events per moderation label", MaxModerationTargets)
	}
	m.Hide = actions[0] == ModerationHide
	m.Repo = repos[0]
	return m, nil
}

// Moderates reports whether pk's moderation labels count in the repository
// r is the roster of: a confirmed maintainer or a moderator (not the author
// of what is hidden, unlike Speaks: hiding is the repository's, not the
// thread's).
func (r Roster) Moderates(pk string) bool { return pk != "" && (r.Has(pk) || r.Moderators[pk]) }

// Moderatable reports whether events of kind can be hidden by moderation:
// the conversation of a repository. Announcements and states (what the
// repository is and which refs it serves), deletions, and the moderation
// labels themselves cannot.
func Moderatable(evt *nostr.Event) bool {
	switch evt.Kind {
	case KindAnnouncement, KindState, KindDeletion, KindGraspList, KindPrivateGraspList:
		return false
	}
	return !IsModeration(evt)
}
