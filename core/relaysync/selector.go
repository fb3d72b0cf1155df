// Package relaysync owns GRASP-02 event sync and its GRASP-03 outbox extension
// (participants' NIP-65 write relays as further relays of a repository,
// asked only for replies, outbox.go; the people's kinds 0, 10002 and 10317
// from the repository's and the bootstrap relays, people.go; each relay's
// role and daily bound, source.go): the self-subscriber, RepoSyncIndex,
// derive_relay_targets and compute_actions (pure functions), the manager actor
// that owns RelaySyncIndex and PendingSyncIndex, relay connections, filter
// layers and the negentropy client with REQ fallback. It never imports git/.
package relaysync

import (
	"context"
	"time"
)

// CandidateSource says why a relay is a candidate for a repo.
type CandidateSource string

const (
	FromAnnouncement CandidateSource = "announcement" // listed in the repo's relays tag
	FromConfig       CandidateSource = "config"       // bootstrap relay from grasp.toml
	FromDiscovered   CandidateSource = "discovered"   // learned at runtime (e.g. 10317 lists)
	FromOutbox       CandidateSource = "outbox"       // a participant's NIP-65 write relay (GRASP-03)
)

// Health is the relay health a selector sees.
type Health struct {
	OK        bool
	Failures  int
	LatencyMs int64
	LastOK    time.Time // zero if never
}

// Candidate is one relay that could be used to sync a repo.
type Candidate struct {
	URL    string
	Source CandidateSource
	Health Health
}

// RepoInfo identifies the repo a selection is for.
type RepoInfo struct {
	Pubkey     string // hex
	Identifier string // the d tag
	Address    string // "30617:<hex>:<d>"
	// Archived: hosted as a GRASP-05 archive (its announcement need not
	// list this server).
	Archived bool
}

// RelaySelector filters and orders the candidate relays for one repo.
// It returns an ordered subset of the candidate URLs; URLs that were not
// candidates are ignored by the caller. Implementations must honour ctx.
type RelaySelector interface {
	SelectRelays(ctx context.Context, repo RepoInfo, candidates []Candidate) ([]string, error)
}

// AllRelays is the built-in selector: every candidate, in the given order.
type AllRelays struct{}

func (AllRelays) SelectRelays(_ context.Context, _ RepoInfo, cs []Candidate) ([]string, error) {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.URL
	}
	return out, nil
}
