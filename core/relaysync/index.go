package relaysync

import (
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/grasp-dev/grasp/core/idtable"
	"github.com/grasp-dev/grasp/core/nip34"
)

// RepoID is a repository's position in a RepoSyncIndex, so per-relay state
// can key on four bytes instead of the ~80-byte "30617:<hex>:<d>"
// coordinate. The id of a removed repository is reused by the next new one:
// whoever removes a repository must drop every per-relay reference to its id
// in the same step (the manager does, in forget).
type RepoID uint32

// RepoSyncIndex is what we want to sync: for every repository coordinate the
// relays its announcement lists and the root events (1617/1618/1619/1621)
// that reference it. It is owned by the manager goroutine and not safe for
// concurrent use.
//
// Each repository's sync items form an append-only sequence: position 0 is
// the coordinate itself (layer 2), position i>0 is the i-th root event seen
// (layer 3). Per-relay confirmed and pending state is then a prefix length
// per repo rather than a set of ids, which is what keeps 10,000 repos × 50
// root events × 5 relays within the memory budget.
type RepoSyncIndex struct {
	byAddr    map[string]RepoID
	repos     []repoEntry
	freeRepos []RepoID // removed positions, reused first

	relayByURL map[string]uint32
	relayURLs  []string
	relayRefs  []uint32 // repositories listing each interned relay
	freeRelays []uint32

	// Event ids are stored once, in events; eventIdx finds their
	// positions (core/idtable).
	eventIdx   idtable.Table
	events     [][32]byte
	eventRepo  []RepoID            // first repo that listed the event
	eventMore  map[uint32][]RepoID // further repos, rare
	freeEvents []uint32

	// Go maps keep their storage after deletes, and churn grows them;
	// each lookup map is rebuilt once it has seen as many deletes as it
	// holds entries (compact, in forget_index.go).
	delAddrs, delRelays, delEvents int
}

type repoEntry struct {
	addr      string
	relays    []uint32 // interned, normalised relay URLs
	outbox    []uint32 // GRASP-03: participants' write relays not in relays
	roots     []uint32 // event indexes, in arrival order
	announced bool
	listsSelf bool
	archived  bool // hosted as a GRASP-05 archive (what selection plugins see)
	held      bool // announced only by an announcement still in purgatory
}

// NewRepoSyncIndex returns an empty index.
func NewRepoSyncIndex() *RepoSyncIndex {
	return &RepoSyncIndex{
		byAddr:     map[string]RepoID{},
		relayByURL: map[string]uint32{},
		eventIdx:   idtable.New(),
		eventMore:  map[uint32][]RepoID{},
	}
}

// Len is the number of repositories known.
func (x *RepoSyncIndex) Len() int { return len(x.byAddr) }

// RootEventCount is the number of distinct root events known.
func (x *RepoSyncIndex) RootEventCount() int { return len(x.events) - len(x.freeEvents) }

// Lookup returns the id of a repository coordinate.
func (x *RepoSyncIndex) Lookup(addr string) (RepoID, bool) {
	id, ok := x.byAddr[addr]
	return id, ok
}

// Addr is the coordinate of a repository.
func (x *RepoSyncIndex) Addr(id RepoID) string { return x.repos[id].addr }

// Items is the length of the repository's item sequence: the coordinate plus
// its root events.
func (x *RepoSyncIndex) Items(id RepoID) uint32 { return uint32(1 + len(x.repos[id].roots)) }

// Relays returns the normalised relay URLs the repository's announcement lists.
func (x *RepoSyncIndex) Relays(id RepoID) []string {
	r := x.repos[id].relays
	out := make([]string, len(r))
	for i, ri := range r {
		out[i] = x.relayURLs[ri]
	}
	return out
}

// RootEvents returns the hex ids of the repository's root events in arrival order.
func (x *RepoSyncIndex) RootEvents(id RepoID) []string {
	roots := x.repos[id].roots
	out := make([]string, len(roots))
	for i, e := range roots {
		out[i] = hex.EncodeToString(x.events[e][:])
	}
	return out
}

func (x *RepoSyncIndex) repo(addr string) RepoID {
	if id, ok := x.byAddr[addr]; ok {
		return id
	}
	var id RepoID
	if n := len(x.freeRepos); n > 0 {
		id = x.freeRepos[n-1]
		x.freeRepos = x.freeRepos[:n-1]
		x.repos[id] = repoEntry{addr: addr}
	} else {
		id = RepoID(len(x.repos))
		x.repos = append(x.repos, repoEntry{addr: addr})
	}
	x.byAddr[addr] = id
	return id
}

func (x *RepoSyncIndex) relay(u string) uint32 {
	if i, ok := x.relayByURL[u]; ok {
		return i
	}
	var i uint32
	if n := len(x.freeRelays); n > 0 {
		i = x.freeRelays[n-1]
		x.freeRelays = x.freeRelays[:n-1]
		x.relayURLs[i], x.relayRefs[i] = u, 0
	} else {
		i = uint32(len(x.relayURLs))
		x.relayURLs = append(x.relayURLs, u)
		x.relayRefs = append(x.relayRefs, 0)
	}
	x.relayByURL[u] = i
	return i
}

// SetAnnouncement records the relays of a repository's latest accepted
// announcement, replacing any earlier list. Relay URLs that do not parse as
// ws:// or wss:// are dropped. listsSelf says whether the announcement lists
// this server, which decides whether it is synced outside archive mode.
func (x *RepoSyncIndex) SetAnnouncement(addr string, relays []string, listsSelf bool) RepoID {
	id := x.repo(addr)
	old := x.repos[id].relays
	var list []uint32
	for _, r := range relays {
		n, err := nip34.NormalizeRelayURL(r)
		if err != nil {
			continue
		}
		ri := x.relay(n)
		dup := false
		for _, have := range list {
			if have == ri {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, ri)
			x.relayRefs[ri]++
		}
	}
	// The new list holds its references before the old one lets go, so a
	// relay in both stays interned under the same index.
	for _, ri := range old {
		x.releaseRelay(ri)
	}
	e := &x.repos[id]
	e.relays = list
	e.announced = true
	e.listsSelf = listsSelf
	e.held = false
	return id
}

// SetOutbox records the participants' write relays of a repository
// (GRASP-03), replacing the earlier list; relays its announcement lists are
// left out. The URLs must be normalised (nip34.NormalizeRelayURL) and
// distinct: parseOutbox normalises each relay list once, and a repository's
// outbox is recomputed far more often than lists arrive.
func (x *RepoSyncIndex) SetOutbox(id RepoID, relays []string) {
	e := &x.repos[id]
	old := e.outbox
	list := make([]uint32, 0, len(relays))
	for _, n := range relays {
		if ri, ok := x.relayByURL[n]; ok && slices.Contains(e.relays, ri) {
			continue
		}
		ri := x.relay(n)
		list = append(list, ri)
		x.relayRefs[ri]++
	}
	for _, ri := range old {
		x.releaseRelay(ri)
	}
	x.repos[id].outbox = list
}

// Outbox returns the repository's outbox relays (SetOutbox).
func (x *RepoSyncIndex) Outbox(id RepoID) []string {
	r := x.repos[id].outbox
	out := make([]string, len(r))
	for i, ri := range r {
		out[i] = x.relayURLs[ri]
	}
	return out
}

// EventRepos returns the repositories the root event with hex id eventID
// references, nil when it is not a known root event.
func (x *RepoSyncIndex) EventRepos(eventID string) []RepoID {
	var raw [32]byte
	if !nip34.IsHex64(eventID) {
		return nil
	}
	if _, err := hex.Decode(raw[:], []byte(eventID)); err != nil {
		return nil
	}
	ei, ok := x.findEvent(raw)
	if !ok {
		return nil
	}
	return x.eventRepos(ei)
}

// eventRepos returns the repositories the root event at position ei references.
func (x *RepoSyncIndex) eventRepos(ei uint32) []RepoID {
	return append([]RepoID{x.eventRepo[ei]}, x.eventMore[ei]...)
}

// AddRootEvent records that the root event with hex id eventID references
// the repository addr (which need not be announced yet). It reports whether
// the pair is new.
func (x *RepoSyncIndex) AddRootEvent(addr, eventID string) (bool, error) {
	var raw [32]byte
	if !nip34.IsHex64(eventID) {
		return false, fmt.Errorf("add root event to %s: invalid: event id %q is not 64 lowercase hex characters", addr, eventID)
	}
	if _, err := hex.Decode(raw[:], []byte(eventID)); err != nil {
		return false, fmt.Errorf("add root event to %s: invalid: event id %q: %w", addr, eventID, err)
	}
	id := x.repo(addr)
	ei, known := x.findEvent(raw)
	if !known {
		ei = x.storeEvent(raw, id)
	} else {
		if x.eventRepo[ei] == id {
			return false, nil
		}
		for _, r := range x.eventMore[ei] {
			if r == id {
				return false, nil
			}
		}
		x.eventMore[ei] = append(x.eventMore[ei], id)
	}
	x.repos[id].roots = append(x.repos[id].roots, ei)
	return true, nil
}

func (x *RepoSyncIndex) findEvent(raw [32]byte) (uint32, bool) {
	return x.eventIdx.Find((*eventIDs)(&x.events), &raw)
}

func (x *RepoSyncIndex) storeEvent(raw [32]byte, repo RepoID) uint32 {
	var i uint32
	if n := len(x.freeEvents); n > 0 {
		i = x.freeEvents[n-1]
		x.freeEvents = x.freeEvents[:n-1]
		x.events[i], x.eventRepo[i] = raw, repo
	} else {
		i = uint32(len(x.events))
		x.events = append(x.events, raw)
		x.eventRepo = append(x.eventRepo, repo)
	}
	x.eventIdx.Insert((*eventIDs)(&x.events), i)
	return i
}

// sharedEvent reports whether an event is listed by more than one repo, the
// only case in which filter values for one relay can repeat.
func (x *RepoSyncIndex) sharedEvent(ei uint32) bool {
	_, ok := x.eventMore[ei]
	return ok
}

// setArchived records whether repository id is a GRASP-05 archive.
func (x *RepoSyncIndex) setArchived(id RepoID, archived bool) {
	if int(id) < len(x.repos) {
		x.repos[id].archived = archived
	}
}

// archived reports whether repository id is a GRASP-05 archive.
func (x *RepoSyncIndex) archived(id RepoID) bool {
	return int(id) < len(x.repos) && x.repos[id].archived
}

// eventIDs is events as the id table reads them.
type eventIDs [][32]byte

func (e *eventIDs) ID(pos uint32) *[32]byte { return &(*e)[pos] }
