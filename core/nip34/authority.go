package nip34

import (
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// Who may write what around an issue, patch or PR, at acceptance (issue 25
// part 1). Roster.Speaks (annotations.go) is the one rule; these say which
// events it applies to and what they are about.

// KindPinnedRepos is GitWorkshop v4's NIP-51 list of a user's own
// repositories to show on their profile: ordered `a` tags, each
// 30617:<the list author>:<d>.
const KindPinnedRepos = 10617

// NIP-51 follow lists GitWorkshop reads: git authors (`p`) and repositories
// (`a`).
const (
	KindFollowAuthors = 10017
	KindFollowRepos   = 10018
)

// IsAnnotation reports whether events of kind annotate an issue, patch or
// PR and count only from a key that speaks for it (Roster.Speaks: the
// root's author, a confirmed maintainer, a moderator): statuses 1630–1633
// (NIP-34), labels and subject edits 1985 and cover notes 1624 (GitWorkshop
// NIP.md, "Authorisation"; maintainers-v3.md §2.5).
func IsAnnotation(kind int) bool {
	return IsStatusKind(kind) || kind == KindLabel || kind == KindCoverNote
}

// AnnotatedRoots are the events an annotation is about: its `e` ids marked
// "root", or every `e` id when none is marked — the reading statuses,
// labels and cover notes share (ParseStatus, ParseLabel, CurrentCoverNote).
func AnnotatedRoots(evt *nostr.Event) []string { return rootIDs(evt.Tags) }

// ForeignPins are the `a` values of a kind-10617 list that do not name one
// of its author's own repositories (30617:<author>:<d>): the list "is
// intended for a user's own repositories only" (GitWorkshop NIP.md).
func ForeignPins(evt *nostr.Event) []string {
	var out []string
	for _, t := range evt.Tags {
		if len(t) < 2 || t[0] != "a" {
			continue
		}
		a, err := ParseAddress(t[1])
		if err != nil || a.Kind != KindAnnouncement || a.Pubkey != evt.PubKey {
			if !slices.Contains(out, t[1]) {
				out = append(out, t[1])
			}
		}
	}
	return out
}
