package nip34

import (
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestRepoRefParseFormat(t *testing.T) {
	r, err := ParseRepoRef("30617:" + pkA + ":my repo:v2")
	if err != nil {
		t.Fatal(err)
	}
	if r.Pubkey != pkA || r.Identifier != "my repo:v2" {
		t.Fatalf("parsed %+v", r)
	}
	if got := r.String(); got != "30617:"+pkA+":my repo:v2" {
		t.Fatalf("String() = %q", got)
	}
	if got := r.StateAddress().String(); got != "30618:"+pkA+":my repo:v2" {
		t.Fatalf("StateAddress() = %q", got)
	}
	bad := []string{
		"", "30617", "30617:" + pkA, "30618:" + pkA + ":x", "30617:" + pkA + ":",
		"30617:" + pkA + ":..", "30617:ABC:x", "30617:" + pkA[:63] + ":x",
		"030617:" + pkA + ":x", "+30617:" + pkA + ":x", "30617:" + pkA + ":a/b",
	}
	for _, s := range bad {
		if r, err := ParseRepoRef(s); err == nil {
			t.Errorf("ParseRepoRef(%q) = %+v, want error", s, r)
		}
	}
}

func TestParseAddressOtherKinds(t *testing.T) {
	a, err := ParseAddress("30618:" + pkB + ":")
	if err != nil {
		t.Fatal(err)
	}
	if a.Kind != 30618 || a.Pubkey != pkB || a.D != "" {
		t.Fatalf("got %+v", a)
	}
	if _, err := ParseAddress("70000:" + pkB + ":x"); err == nil {
		t.Fatal("kind above 65535 accepted")
	}
}

// RepoOf names the repository a log line about an event names: its own for
// an announcement or state, the first a/A/q coordinate for the rest (a PR's
// d tag is empty; its repository is in its a tag).
func TestRepoOfNamesTheEventsRepository(t *testing.T) {
	own := RepoRef{Pubkey: pkA, Identifier: "my repo"}
	for _, kind := range []int{KindAnnouncement, KindState} {
		got, ok := RepoOf(&nostr.Event{Kind: kind, PubKey: pkA, Tags: nostr.Tags{{"d", "my repo"}}})
		if !ok || got != own {
			t.Errorf("kind %d: RepoOf = %+v %v, want %+v", kind, got, ok, own)
		}
	}
	pr := &nostr.Event{Kind: KindPR, PubKey: pkB, Tags: nostr.Tags{
		{"e", pkA}, {"a", "30618:" + pkA + ":x"}, {"a", "30617:" + pkA + ":my repo"}, {"a", "30617:" + pkB + ":other"},
	}}
	if got, ok := RepoOf(pr); !ok || got != own || got.URLPath() != "/"+Npub(pkA)+"/my%20repo.git" {
		t.Errorf("PR: RepoOf = %+v %v (%s), want %+v", got, ok, got.URLPath(), own)
	}
	for _, evt := range []*nostr.Event{
		{Kind: KindAnnouncement, PubKey: pkA},
		{Kind: KindIssue, PubKey: pkA, Tags: nostr.Tags{{"a", "30617:" + pkA + ":.."}}},
	} {
		if got, ok := RepoOf(evt); ok {
			t.Errorf("kind %d with no repository: RepoOf = %+v", evt.Kind, got)
		}
	}
}
