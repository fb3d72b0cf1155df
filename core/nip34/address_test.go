package nip34

import "testing"

// Issue 25 part 4: a repository's nostr:// address names its announcement
// coordinate and a relay hint in ngit's form.
func TestRepoNostrURL(t *testing.T) {
	r := RepoRef{Pubkey: pkA, Identifier: "my-repo"}
	for hint, want := range map[string]string{
		"wss://git.example.org":      "nostr://" + Npub(pkA) + "/git.example.org/my-repo",
		"wss://example.org/grasp/":   "nostr://" + Npub(pkA) + "/example.org%2Fgrasp/my-repo",
		"ws://abc.onion":             "nostr://" + Npub(pkA) + "/ws%3A%2F%2Fabc.onion/my-repo",
		"wss://git.example.org:8443": "nostr://" + Npub(pkA) + "/git.example.org%3A8443/my-repo",
		"":                           "nostr://" + Npub(pkA) + "/my-repo",
	} {
		if got := r.NostrURL(hint); got != want {
			t.Errorf("NostrURL(%q) = %s, want %s", hint, got, want)
		}
	}
}
