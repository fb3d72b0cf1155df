package policy

import (
	"fmt"

	"github.com/grasp-dev/grasp/core/nip34"
)

// EffectKind names one thing the caller of Decide must do besides storing,
// holding or rejecting the event itself. The rules never touch git or
// purgatory; they say what must happen and the owners of those do it.
type EffectKind int

const (
	// CreateRepo: create the bare repository Repo now, so the first push can
	// land while the announcement is held (G01-P2).
	CreateRepo EffectKind = iota + 1
	// NoRepo: the announcement was accepted because its author maintains a
	// repository hosted here (G01-R2x); do not create a bare repo for it.
	NoRepo
	// ReplaceHeld: the event replaces the held announcement of Repo; replace
	// the entry and restart its expiry.
	ReplaceHeld
	// EvictHeld: drop the held announcement of Repo (its replacement no
	// longer lists this service).
	EvictHeld
	// RemoveRepo: Repo is no longer announced on this service; retire its
	// bare repository under the operator's retention policy.
	RemoveRepo
	// ReleaseHeld: the held announcement of Repo has its git data now (a
	// state whose objects are all present arrived); release it.
	ReleaseHeld
	// AlignRepo: set the refs and HEAD of Repo to this state event.
	AlignRepo
	// BindNostrRef: point refs/nostr/<EventID> of Repo at OIDs[0] (a PR
	// whose tip is already present).
	BindNostrRef
	// AwaitGitData: the held event is released when OIDs exist in Repo.
	AwaitGitData
	// AwaitRepo: the held event is released together with the held
	// announcement of Repo.
	AwaitRepo
	// AwaitEvent: the held event is released together with the held event
	// EventID (an issue or PR that is itself in purgatory).
	AwaitEvent
)

var effectNames = map[EffectKind]string{
	CreateRepo: "createRepo", NoRepo: "noRepo", ReplaceHeld: "replaceHeld", EvictHeld: "evictHeld",
	RemoveRepo: "removeRepo", ReleaseHeld: "releaseHeld", AlignRepo: "alignRepo",
	BindNostrRef: "bindNostrRef", AwaitGitData: "awaitGitData", AwaitRepo: "awaitRepo", AwaitEvent: "awaitEvent",
}

func (k EffectKind) String() string {
	if n, ok := effectNames[k]; ok {
		return n
	}
	return fmt.Sprintf("effect(%d)", int(k))
}

// Effect is one side effect of a Decision.
type Effect struct {
	Kind    EffectKind
	Repo    nip34.RepoRef
	EventID string   // AwaitEvent, BindNostrRef
	OIDs    []string // AwaitGitData, BindNostrRef
}

func (e Effect) String() string {
	s := e.Kind.String()
	if !e.Repo.IsZero() {
		s += " " + e.Repo.String()
	}
	if e.EventID != "" {
		s += " event " + e.EventID
	}
	if len(e.OIDs) > 0 {
		s += fmt.Sprintf(" oids %v", e.OIDs)
	}
	return s
}

// Has reports whether d carries an effect of kind k for repo r (zero r
// matches any repo).
func (d Decision) Has(k EffectKind, r nip34.RepoRef) bool {
	for _, e := range d.Effects {
		if e.Kind == k && (r.IsZero() || e.Repo == r) {
			return true
		}
	}
	return false
}
