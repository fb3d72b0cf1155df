package nip34

import (
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// at sets created_at and recomputes the id.
func at(e *nostr.Event, t int64) *nostr.Event {
	e.CreatedAt = nostr.Timestamp(t)
	e.ID = e.GetID()
	return e
}

// TestLabels_AuthorisedUnionAndLatestSubject: GitWorkshop v4's label rule
// (NIP.md, "After-the-fact Labels", "Subject Edits"): the root's own `t`
// tags plus the "#t" values of label events by the root's author, a
// confirmed maintainer or a moderator; a stranger's labels and renames
// count for nothing; the latest authorised rename is the subject.
func TestLabels_AuthorisedUnionAndLatestSubject(t *testing.T) {
	author, maint, mod, stranger := pkA, pkB, pkC, pkD
	r := Roster{Maintainers: map[string]bool{maint: true}, Moderators: map[string]bool{mod: true}}
	root := ev(KindIssue, author, []string{"subject", "Original"}, []string{"t", "bug"})
	label := func(pk string, t int64, tags ...[]string) *nostr.Event {
		return at(ev(KindLabel, pk, append([][]string{{"e", root.ID, "", "root"}}, tags...)...), t)
	}
	events := []*nostr.Event{
		label(maint, 10, []string{"L", "#t"}, []string{"l", "needs-triage", "#t"}, []string{"l", "bug", "#t"}),
		label(mod, 11, []string{"L", "#t"}, []string{"l", "ui", "#t"}),
		label(stranger, 12, []string{"L", "#t"}, []string{"l", "spam", "#t"}),
		label(author, 13, []string{"L", "#subject"}, []string{"l", "Renamed by the author", "#subject"}),
		label(maint, 14, []string{"L", "#subject"}, []string{"l", "Renamed by a maintainer", "#subject"}),
		label(stranger, 15, []string{"L", "#subject"}, []string{"l", "Renamed by a stranger", "#subject"}),
		// a label without namespace is NIP-32's "ugc", not a topic
		label(maint, 16, []string{"l", "not-a-topic"}),
		// about another root
		at(ev(KindLabel, maint, []string{"e", pkD, "", "root"}, []string{"l", "elsewhere", "#t"}), 17),
	}
	tags, subject, renames := Labels(root, r, events)
	if want := []string{"bug", "needs-triage", "ui"}; !slices.Equal(tags, want) {
		t.Errorf("labels %v, want %v", tags, want)
	}
	if subject != "Renamed by a maintainer" {
		t.Errorf("subject %q", subject)
	}
	if len(renames) != 2 || renames[0].CreatedAt != 13 || renames[1].CreatedAt != 14 {
		t.Errorf("renames: %v", renames)
	}
	if _, subject, _ := Labels(root, r, nil); subject != "Original" {
		t.Errorf("without renames the subject is the root's: %q", subject)
	}
}

// TestCoverNote_LatestAuthorised: the newest cover note by the root's
// author or a maintainer wins; a stranger's newer one is ignored, and so
// is one naming the root only by uppercase E.
func TestCoverNote_LatestAuthorised(t *testing.T) {
	author, maint, stranger := pkA, pkB, pkD
	r := Roster{Maintainers: map[string]bool{maint: true}}
	rootID := pkC
	note := func(pk string, t int64, tag string) *nostr.Event {
		return at(ev(KindCoverNote, pk, []string{tag, rootID, "", "root"}), t)
	}
	byAuthor, byMaint := note(author, 10, "e"), note(maint, 20, "e")
	got := CurrentCoverNote(rootID, author, r, []*nostr.Event{byAuthor, byMaint, note(stranger, 30, "e"), note(maint, 40, "E")})
	if got == nil || got.ID != byMaint.ID {
		t.Fatalf("cover note %v, want the maintainer's", got)
	}
	if CurrentCoverNote(rootID, author, r, []*nostr.Event{note(stranger, 30, "e")}) != nil {
		t.Error("a stranger's cover note counted")
	}
}

// TestReviews_NewestPerReviewer: the newest valid 7321 per reviewer is the
// verdict; a review with an unknown verdict or about another PR is not.
func TestReviews_NewestPerReviewer(t *testing.T) {
	pr := pkC
	review := func(pk string, t int64, verdict string) *nostr.Event {
		return at(ev(KindReview, pk, []string{"e", pr, "", "root"}, []string{"s", verdict}), t)
	}
	old, newer := review(pkA, 10, "Changes Required"), review(pkA, 20, "ACK")
	other := review(pkB, 15, "Concept NACK")
	got := CurrentReviews(pr, []*nostr.Event{old, newer, other, review(pkD, 30, "LGTM"),
		at(ev(KindReview, pkD, []string{"e", pkA, "", "root"}, []string{"s", "ACK"}), 31)})
	if len(got) != 2 || got[0].ID != other.ID || got[1].ID != newer.ID {
		t.Fatalf("reviews %v, want B's then A's newest", got)
	}
}
