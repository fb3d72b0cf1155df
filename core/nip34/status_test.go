package nip34

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func statusEvt(kind int, author, root string, at int64, id string) *nostr.Event {
	return &nostr.Event{ID: id, Kind: kind, PubKey: author, CreatedAt: nostr.Timestamp(at),
		Tags: nostr.Tags{{"e", root, "", "root"}}}
}

// TestN34_StatusRules: the latest status by the root's author, a
// maintainer or a moderator wins; strangers' statuses and statuses about
// other events do not count; none means open.
func TestN34_StatusRules(t *testing.T) {
	root := strings.Repeat("1", 64)
	other := strings.Repeat("2", 64)
	author, maint, mod, stranger := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64), strings.Repeat("d", 64)
	r := Roster{Maintainers: map[string]bool{maint: true}, Moderators: map[string]bool{mod: true}}
	id := func(c string) string { return strings.Repeat(c, 64) }
	cases := []struct {
		name string
		evs  []*nostr.Event
		want int
	}{
		{"none is open", nil, KindStatusOpen},
		{"author closes", []*nostr.Event{statusEvt(KindStatusClosed, author, root, 10, id("e"))}, KindStatusClosed},
		{"maintainer merges after author closes", []*nostr.Event{
			statusEvt(KindStatusClosed, author, root, 10, id("e")),
			statusEvt(KindStatusMerged, maint, root, 11, id("f"))}, KindStatusMerged},
		{"moderator drafts", []*nostr.Event{statusEvt(KindStatusDraft, mod, root, 10, id("e"))}, KindStatusDraft},
		{"stranger ignored", []*nostr.Event{
			statusEvt(KindStatusClosed, author, root, 10, id("e")),
			statusEvt(KindStatusOpen, stranger, root, 20, id("f"))}, KindStatusClosed},
		{"other root ignored", []*nostr.Event{statusEvt(KindStatusClosed, maint, other, 10, id("e"))}, KindStatusOpen},
		{"tie: lower id wins", []*nostr.Event{
			statusEvt(KindStatusClosed, maint, root, 10, id("f")),
			statusEvt(KindStatusMerged, maint, root, 10, id("e"))}, KindStatusMerged},
	}
	for _, tc := range cases {
		if got := CurrentStatus(root, author, r, tc.evs); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
}
