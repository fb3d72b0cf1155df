package nip34

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
)

// Address is a NIP-01 addressable-event coordinate "<kind>:<pubkey>:<d>".
type Address struct {
	Kind   int
	Pubkey string
	D      string
}

// ParseAddress parses "<kind>:<hex pubkey>:<d>". The d part may itself
// contain colons; only the first two separate fields.
func ParseAddress(s string) (Address, error) {
	kindStr, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Address{}, fmt.Errorf("address %q: want <kind>:<pubkey>:<d>", s)
	}
	pk, d, ok := strings.Cut(rest, ":")
	if !ok {
		return Address{}, fmt.Errorf("address %q: want <kind>:<pubkey>:<d>", s)
	}
	kind, err := strconv.Atoi(kindStr)
	if err != nil || kind < 0 || kind > 65535 || strconv.Itoa(kind) != kindStr {
		return Address{}, fmt.Errorf("address %q: bad kind %q", s, kindStr)
	}
	if !IsHex64(pk) {
		return Address{}, fmt.Errorf("address %q: pubkey is not 64 lowercase hex", s)
	}
	return Address{Kind: kind, Pubkey: pk, D: d}, nil
}

func (a Address) String() string {
	return strconv.Itoa(a.Kind) + ":" + a.Pubkey + ":" + a.D
}

// RepoRef names one repository: the announcement coordinate
// "30617:<owner hex>:<identifier>". It is the one repository identity of
// grasp: purgatory entries, hunter needs, git.Repos (which derives the
// on-disk <npub>/<identifier>.git from it) and the effects all use it.
//
// The JSON names are purgatory's durable format (held entries written
// before a restart must load after it); do not change them.
//
// PRs marks the GRASP-06 repository /prs/<npub>/<identifier>.git, where
// Pubkey is the signer of the PRs pushed there rather than an announcement's
// author: a namespace of its own, never announced, never synced or listed.
// RepoRefs differing only in PRs are different repositories.
type RepoRef struct {
	Pubkey     string `json:"owner"` // hex
	Identifier string `json:"d"`
	PRs        bool   `json:"prs,omitempty"`
}

// ParseRepoRef parses "30617:<hex>:<d>" and validates the identifier.
func ParseRepoRef(s string) (RepoRef, error) {
	a, err := ParseAddress(s)
	if err != nil {
		return RepoRef{}, err
	}
	if a.Kind != KindAnnouncement {
		return RepoRef{}, fmt.Errorf("repository reference %q: kind %d is not %d", s, a.Kind, KindAnnouncement)
	}
	if err := ValidateIdentifier(a.D); err != nil {
		return RepoRef{}, fmt.Errorf("repository reference %q: %w", s, err)
	}
	return RepoRef{Pubkey: a.Pubkey, Identifier: a.D}, nil
}

// String formats the coordinate as it appears in `a` tags.
func (r RepoRef) String() string {
	return strconv.Itoa(KindAnnouncement) + ":" + r.Pubkey + ":" + r.Identifier
}

// StateAddress is the coordinate of the owner's state event for this repo.
func (r RepoRef) StateAddress() Address {
	return Address{Kind: KindState, Pubkey: r.Pubkey, D: r.Identifier}
}

// Npub is the owner's npub, the first path segment of the repository's URL.
func (r RepoRef) Npub() string { return Npub(r.Pubkey) }

// IsZero reports whether r is the zero RepoRef.
func (r RepoRef) IsZero() bool { return r.Pubkey == "" && r.Identifier == "" }

// PRsRepo is the GRASP-06 repository of signer's PRs for identifier d,
// /prs/<npub>/<d>.git.
func PRsRepo(signer, d string) RepoRef { return RepoRef{Pubkey: signer, Identifier: d, PRs: true} }

// URLPath is the repository's path under the service's base path:
// /<npub>/<pct(d)>.git, or /prs/<npub>/<pct(d)>.git for a GRASP-06 one.
//
// It is also how every log line names a repository, under the key "repo":
// the path a reverse proxy's access log shows for the repository's git
// requests and pages, so one grep finds both (docs/operations.md, Logs;
// TestLogLinesNameRepositoriesOneWay keeps every line to it).
func (r RepoRef) URLPath() string {
	p := "/" + Npub(r.Pubkey) + "/" + EscapeIdentifier(r.Identifier) + ".git"
	if r.PRs {
		return "/prs" + p
	}
	return p
}

// RepoOf is the repository evt is about, for naming it in a log line: an
// announcement's or state's own (author and d), else the first repository
// coordinate among its a/A/q tags (a PR's, an issue's, a status's). ok is
// false when evt names none.
func RepoOf(evt *nostr.Event) (r RepoRef, ok bool) {
	if evt.Kind == KindAnnouncement || evt.Kind == KindState {
		r = RepoRef{Pubkey: evt.PubKey, Identifier: evt.Tags.GetD()}
		return r, r.Identifier != ""
	}
	if rs := ReferencesOf(evt).Repos(); len(rs) > 0 {
		return rs[0], true
	}
	return RepoRef{}, false
}
