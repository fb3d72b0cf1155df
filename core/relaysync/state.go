package relaysync

import (
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/nbd-wtf/go-nostr"
)

// ConnStatus is the lifecycle of one relay connection.
type ConnStatus uint8

const (
	Disconnected ConnStatus = iota
	Connecting
	Connected
)

func (s ConnStatus) String() string {
	switch s {
	case Disconnected:
		return "disconnected"
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	}
	return "unknown"
}

// ItemRange is positions [From, To) of one repository's item sequence
// (0 = the coordinate, i>0 = its i-th root event).
type ItemRange struct {
	Repo     RepoID
	From, To uint32
}

// RelaySyncIndex is the confirmed state and connection lifecycle per relay
// URL. Owned by the manager goroutine.
type RelaySyncIndex map[string]*RelayState

// RelayState is one relay's confirmed sync state and connection.
type RelayState struct {
	URL       string
	Bootstrap bool // never disconnected for having nothing to sync
	Status    ConnStatus
	// LastConnected is the last moment the relay was known connected (set on
	// connect and on disconnect); zero means a fresh sync is due.
	LastConnected  time.Time
	DisconnectedAt time.Time
	// Confirmed is, per repository, how long a prefix of its item sequence
	// has been fetched from this relay (EOSE or negentropy done).
	Confirmed map[RepoID]uint32
	// Filters is how many filters (one per subscription) are open.
	Filters int

	ahead  []ItemRange // confirmed out of order, merged once contiguous
	subs   map[string]*subscription
	layer1 string // subscription id of the layer 1 filter, "" if none
	// layer1Owed is set when a layer 1 closed before its catch-up finished:
	// the next layer 1 must start where that one did (layer1From, nil for
	// full history), or what it had still to bring is never asked for.
	layer1Owed     bool
	layer1From     *nostr.Timestamp
	deferred       bool // an AddFilters waits for pending batches (consolidation)
	connectStarted time.Time
	dailyTimer     clock.Timer
	dailyGen       uint64
	reconnectTimer clock.Timer
	reconnectGen   uint64

	// GRASP-03 people (people.go): per repository, how long a prefix of
	// its people has been asked for, and the people filters open.
	people        map[RepoID]uint32
	peopleFilters int
}

type subscription struct {
	batch  *PendingBatch // nil for layer 1 and catch-up subscriptions
	items  bool          // layer 2+3 (closed by consolidation)
	group  *subGroup     // the repositories it serves; nil for layer 1 and people
	people bool          // GRASP-03 people (kinds 0, 10002, 10317)
	layer1 string        // the layer 1 subscription's key (layer1Filter)
	since  *nostr.Timestamp
	// caughtUp: the relay reported the end of its stored events (EOSE or
	// negentropy done). A subscription closed before that owes its catch-up.
	caughtUp bool
}

func newRelayState(url string, bootstrap bool) *RelayState {
	return &RelayState{URL: url, Bootstrap: bootstrap, Confirmed: map[RepoID]uint32{}, subs: map[string]*subscription{}}
}

// ClearSyncState forgets what was confirmed, so the next compute_actions
// asks for everything again (stale reconnect, daily fresh sync).
func (r *RelayState) ClearSyncState() {
	clear(r.Confirmed)
	r.ahead = nil
	r.people = nil
}

// ConfirmedCounts is how many repositories and root events are confirmed.
func (r *RelayState) ConfirmedCounts() (repos, events int) {
	for _, n := range r.Confirmed {
		if n > 0 {
			repos++
			events += int(n) - 1
		}
	}
	return repos, events
}

// confirm extends the confirmed prefixes with completed ranges. A range that
// starts past its repository's prefix (a later batch finished first) waits in
// ahead until the gap closes, so confirmed never claims unfetched items.
func (r *RelayState) confirm(items []ItemRange) {
	r.ahead = append(r.ahead, items...)
	for progress := true; progress; {
		progress = false
		kept := r.ahead[:0]
		for _, it := range r.ahead {
			have := r.Confirmed[it.Repo]
			if it.From <= have {
				if it.To > have {
					r.Confirmed[it.Repo] = it.To
				}
				progress = true
				continue
			}
			kept = append(kept, it)
		}
		r.ahead = kept
	}
	if len(r.ahead) == 0 {
		r.ahead = nil
	}
}

// PendingSyncIndex is the in-flight batches per relay URL.
type PendingSyncIndex map[string][]*PendingBatch

// PendingBatch is one AddFilters in flight: its items are confirmed when
// every subscription in it has reported EOSE or finished negentropy.
type PendingBatch struct {
	ID          uint64
	Items       []ItemRange
	Outstanding []string
	CatchUp     CatchUp
	subs        []string // every subscription of the batch, done or not
}

func (b *PendingBatch) done(subID string) bool {
	for i, s := range b.Outstanding {
		if s == subID {
			b.Outstanding = append(b.Outstanding[:i], b.Outstanding[i+1:]...)
			break
		}
	}
	return len(b.Outstanding) == 0
}
