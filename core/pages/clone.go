package pages

import (
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/nip34"
)

// cloneBox is how a repository is cloned, each form copyable without a
// script (one click selects it whole: user-select: all in the style).
type cloneBox struct {
	HTTPS string // git clone over smart HTTP from this server
	Nostr string // ngit's nostr://<npub>/<relay hint>/<identifier> (NIP-34, nips#2312)
	Naddr string // the announcement's address with relay hints (NIP-19)
}

// cloneBoxOf names repo in the three forms; the relay hint is this server's
// relay, then the relays the announcement lists.
func (p *Pages) cloneBoxOf(repo nip34.RepoRef, m repoMeta) cloneBox {
	svc := p.opts.Service
	relay := svc.RelayURL()
	b := cloneBox{
		HTTPS: svc.CloneURL(repo.Pubkey, repo.Identifier),
		Nostr: "nostr://" + repo.Npub() + "/" + relayHint(relay) + "/" + nip34.EscapeIdentifier(repo.Identifier),
	}
	relays := []string{relay}
	for _, r := range m.Relays {
		if len(relays) == 3 {
			break
		}
		if n, err := nip34.NormalizeRelayURL(r); err == nil && n != relay && !slices.Contains(relays, n) {
			relays = append(relays, n)
		}
	}
	if naddr, err := nip19.EncodeEntity(repo.Pubkey, nip34.KindAnnouncement, repo.Identifier, relays); err == nil {
		b.Naddr = naddr
	}
	return b
}

// relayHint writes a relay URL as ngit's nostr:// URLs carry it: a wss://
// relay as its host and path, any other whole, each percent-encoded as a
// path segment (RFC 3986 §2.1, as the identifier is).
func relayHint(relay string) string {
	if rest, ok := strings.CutPrefix(relay, "wss://"); ok {
		return nip34.EscapeIdentifier(strings.TrimSuffix(rest, "/"))
	}
	return nip34.EscapeIdentifier(relay)
}
