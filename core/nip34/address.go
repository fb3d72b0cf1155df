package nip34

import (
	"net/url"
	"strings"
)

// A repository's git remote address (issue 25 part 4), next to its clone
// URL and its naddr (NIP-19, encoded where it is shown: nip34 stays free of
// go-nostr/nip19, see npub.go): it names the announcement coordinate
// 30617:<owner>:<d> with a relay hint, and ngit and git-remote-nostr resolve
// it to the same repository a NIP-AD web address
// (nostr.json?path=/<npub>/<d>.git) resolves to.

// NostrURL is the repository's git remote address in ngit's form,
// nostr://<npub>/<relay hint>/<identifier>: the relay hint is written
// without "wss://" (which ngit assumes when no scheme is given) and
// percent-encoded, so a ws:// relay (a .onion) keeps its scheme as
// "ws%3A%2F%2F…"; no hint, nostr://<npub>/<identifier>.
func (r RepoRef) NostrURL(relayHint string) string {
	var b strings.Builder
	b.WriteString("nostr://")
	b.WriteString(Npub(r.Pubkey))
	b.WriteByte('/')
	if h := strings.TrimSuffix(relayHint, "/"); h != "" {
		b.WriteString(url.QueryEscape(strings.TrimPrefix(h, "wss://")))
		b.WriteByte('/')
	}
	b.WriteString(r.Identifier)
	return b.String()
}
