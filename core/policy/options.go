package policy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/archive"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/roster"
)

// Events is the part of the event store the GRASP rules read.
// eventstore.Store satisfies it. Queries must close the channel when done
// and stop when ctx is cancelled.
type Events interface {
	QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error)
}

// Held is the read side of purgatory: events accepted but not yet served
// (announcements, states, PRs, and the issues and comments waiting with
// them). QueryHeld returns the held events matching f (ids, authors, kinds
// and tag filters as in NIP-01; since/until/limit may be ignored).
type Held interface {
	QueryHeld(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error)
}

// GitData answers whether the object oid (a commit, or the tag object of an
// annotated tag) exists in the bare repository repo on this server. A
// repository that does not exist has no objects. git.Repos implements it.
type GitData interface {
	HasCommit(ctx context.Context, repo nip34.RepoRef, oid string) (bool, error)
}

// Options is the GRASP acceptance configuration ([grasp] in grasp.toml) and
// what the rules read through.
type Options struct {
	// Events is the main store (required); Held is purgatory and Git the
	// bare repositories (nil only in setups without them).
	Events Events
	Held   Held
	Git    GitData

	// Service is this server's public identity; announcements must list it.
	Service nip34.Service
	// EventBlacklist: authors (npub or hex) whose events are all refused.
	EventBlacklist []string
	// RepoWhitelist / RepoBlacklist entries: "npub" (every repository of
	// that owner), "npub/identifier" (one repository) or "identifier" (that
	// identifier for every owner). The blacklist beats the whitelist; an
	// empty whitelist admits every repository.
	RepoWhitelist []string
	RepoBlacklist []string
	// RelayKey is the relay's own key (relay.pubkey, hex; "" for none):
	// its events are always accepted (rules.go, relayKey).
	RelayKey string
	// MaxReposPerPubkey caps the repositories one author may host here
	// (stored or held); 0 means no cap.
	MaxReposPerPubkey int
	// MaxReferenceDepth bounds how far a comment, note or reaction may be
	// from an accepted repository or root event (1 = it tags one directly).
	// Issues, patches and statuses must always be direct. 0 means 2.
	MaxReferenceDepth int
	// Roster reads announcements by author and applies the v3 maintainer
	// rule (shared with hosting, so both read the same); nil builds one over
	// Events and Held.
	Roster *roster.Source
	// Pre runs before the GRASP rules for every event whatever its source;
	// core/server puts the operator's NIP-86 lists (nip86.State.Accept)
	// there. The cheap event limits are core/relay's, checked before Decide.
	Pre Chain
	// Plugins is the operator's accept chain; it runs after the GRASP rules
	// and only for events they would store or hold.
	Plugins Chain
	// PluginNames describe Plugins in the NIP-11 curation text.
	PluginNames []string
	// PurgatoryTTL is only quoted in the acceptance criteria text.
	PurgatoryTTL time.Duration
	// Archive is the GRASP-05 scope (core/archive), the one answer to
	// "is this repository hosted here"; nil: archive mode off.
	Archive *archive.Scope
	// Usage reports what a pubkey and a client address hold as placeholders
	// (purgatory's count), for the plugin chain's Meta.Usage; nil: plugins
	// see none.
	Usage func(pubkey, remote string) Usage
	// GRASP06 accepts PRs for repositories not hosted here when they name
	// this service's /prs/ endpoint (grasp.grasp06, pr.go).
	GRASP06 bool
}

// repoList is a parsed whitelist or blacklist.
type repoList struct {
	owners map[string]bool        // hex
	repos  map[nip34.RepoRef]bool // owner hex + identifier
	ids    map[string]bool        // identifier, any owner
	raw    []string
}

func parseRepoList(entries []string) (repoList, error) {
	l := repoList{owners: map[string]bool{}, repos: map[nip34.RepoRef]bool{}, ids: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		l.raw = append(l.raw, e)
		if owner, id, ok := strings.Cut(e, "/"); ok {
			hex, isKey := nip34.PubkeyHex(owner)
			if !isKey {
				return repoList{}, fmt.Errorf("repository list entry %q: %q is not an npub", e, owner)
			}
			if err := nip34.ValidateIdentifier(id); err != nil {
				return repoList{}, fmt.Errorf("repository list entry %q: %w", e, err)
			}
			l.repos[nip34.RepoRef{Pubkey: hex, Identifier: id}] = true
			continue
		}
		if hex, isKey := nip34.PubkeyHex(e); isKey {
			l.owners[hex] = true
			continue
		}
		if err := nip34.ValidateIdentifier(e); err != nil {
			return repoList{}, fmt.Errorf("repository list entry %q: %w", e, err)
		}
		l.ids[e] = true
	}
	return l, nil
}

func (l repoList) empty() bool { return len(l.raw) == 0 }

func (l repoList) match(owner, id string) bool {
	return l.owners[owner] || l.ids[id] || l.repos[nip34.RepoRef{Pubkey: owner, Identifier: id}]
}

// why names the entry that matched, for a rejection message.
func (l repoList) why(owner, id string) string {
	switch {
	case l.owners[owner]:
		return "repository owner " + nip34.Npub(owner)
	case l.repos[nip34.RepoRef{Pubkey: owner, Identifier: id}]:
		return "repository " + nip34.Npub(owner) + "/" + id
	default:
		return "repository identifier " + id
	}
}

func parseKeyList(entries []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, e := range entries {
		if strings.TrimSpace(e) == "" {
			continue
		}
		hex, ok := nip34.PubkeyHex(e)
		if !ok {
			return nil, fmt.Errorf("event blacklist entry %q is not an npub or hex pubkey", e)
		}
		out[hex] = true
	}
	return out, nil
}
