package relaysync

import (
	"encoding/hex"
	"slices"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// GRASP-03 Sync+: the conversation on an accepted issue, patch or PR is also
// read from its participants' NIP-65 write relays. The participants of a
// root event are the authors of the root and of the replies to it and the
// keys they p-tag; their kind 10002 lists give the relays. A repository's
// outbox relays are those of the participants of all its root events; they
// get the same layer 2+3 subscriptions (events tagging the coordinate via
// a/A/q and the root ids via e/E/q), so what they send goes through the same
// catch-up, health backoff and acceptance pipeline as any synced event.

// KindRelayList is the NIP-65 relay list.
const KindRelayList = 10002

// maxWriters bounds the relay lists kept. Policy stores 10002 only for
// participants, so this is a safety net against a policy that accepts more.
const maxWriters = 100000

// maxReplyRefs bounds how many e/E/q values of one reply are looked up.
const maxReplyRefs = 8

// outboxState is owned by the manager goroutine.
type outboxState struct {
	// Root events are kept as their positions in the repository index
	// (RepoSyncIndex.events), 4 bytes instead of the 32-byte id, and
	// participants as their ids in keys, 4 bytes instead of a string
	// header: there is one root event per issue or patch series in the
	// store (a million on an archive), with a few participants each (issue
	// 27 part 2: 32-byte ids in participants' lists, a map of ids and
	// string lists took ~110 MiB at a million events). A root's position is
	// reused only after the event leaves the index, and forget drops its
	// entries here in the same step (forgetOutbox).
	// parts: root position → its participants' key ids (first perRoot):
	// 0 for none, key id+1 for a root with one (most roots: its author),
	// partList|i for a list in partLists. A [][]uint32 by position took
	// a 24-byte header per root and an 8-byte allocation for the one
	// participant, ~56 MiB at 5,000,000 events (issue 27 part 2).
	parts     []uint32
	partLists [][]uint32
	partFree  []uint32            // unused positions in partLists
	roots     [][]uint32          // key id → positions of the roots they take part in
	writes    map[string][]string // pubkey → write relays, first perParticipant
	people    map[RepoID][]uint32 // repository → its people's key ids (people.go)
	// keys holds each participant's key once; a reference is counted for
	// every root and every repository's people list the key is in.
	keys pubkeys
	// rootCount is the number of roots with participants (len(parts)
	// counts free positions too).
	rootCount int
}

func newOutboxState() *outboxState {
	return &outboxState{writes: map[string][]string{}, people: map[RepoID][]uint32{}, keys: newPubkeys()}
}

// partList marks a parts value that is an index into partLists.
const partList = 1 << 31

// participantsOf returns the key ids of the participants of the root at
// position ei; one is returned in buf.
func (ob *outboxState) participantsOf(ei uint32, buf *[1]uint32) []uint32 {
	if int(ei) >= len(ob.parts) {
		return nil
	}
	switch v := ob.parts[ei]; {
	case v == 0:
		return nil
	case v&partList != 0:
		return ob.partLists[v&^partList]
	default:
		buf[0] = v - 1
		return buf[:]
	}
}

// setParticipants records have (not empty) as the participants of the
// root at position ei.
func (ob *outboxState) setParticipants(ei uint32, have []uint32) {
	if int(ei) >= len(ob.parts) {
		ob.parts = append(ob.parts, make([]uint32, int(ei)+1-len(ob.parts))...)
	}
	old := ob.parts[ei]
	if len(have) == 1 {
		ob.dropList(old)
		ob.parts[ei] = have[0] + 1
		return
	}
	if old&partList != 0 {
		ob.partLists[old&^partList] = have
		return
	}
	if n := len(ob.partFree); n > 0 {
		i := ob.partFree[n-1]
		ob.partFree = ob.partFree[:n-1]
		ob.partLists[i] = have
		ob.parts[ei] = partList | i
		return
	}
	ob.partLists = append(ob.partLists, have)
	ob.parts[ei] = partList | uint32(len(ob.partLists)-1)
}

// clearParticipants forgets the participants of the root at position ei;
// it reports whether it had any.
func (ob *outboxState) clearParticipants(ei uint32) bool {
	if int(ei) >= len(ob.parts) || ob.parts[ei] == 0 {
		return false
	}
	ob.dropList(ob.parts[ei])
	ob.parts[ei] = 0
	return true
}

func (ob *outboxState) dropList(v uint32) {
	if v&partList != 0 {
		ob.partLists[v&^partList] = nil
		ob.partFree = append(ob.partFree, v&^partList)
	}
}

// rootsOf returns the positions of the roots key id k takes part in.
func (ob *outboxState) rootsOf(k uint32) []uint32 {
	if int(k) < len(ob.roots) {
		return ob.roots[k]
	}
	return nil
}

// rootPosition is the repository index's position of the root event with
// hex id root.
func (m *Manager) rootPosition(root string) (uint32, bool) {
	var raw [32]byte
	if !nip34.IsHex64(root) {
		return 0, false
	}
	if _, err := hex.Decode(raw[:], []byte(root)); err != nil {
		return 0, false
	}
	return m.repos.findEvent(raw)
}

// parseOutbox turns a reply or a relay list into an update; root events
// are parsed by parse, which adds their participants.
func (m *Manager) parseOutbox(evt *nostr.Event) (update, bool) {
	if evt.Kind == KindRelayList {
		u := update{writer: evt.PubKey, writes: []string{}}
		for _, t := range evt.Tags {
			// NIP-65: no marker is read and write; "read" is read only.
			if len(t) < 2 || t[0] != "r" || (len(t) >= 3 && t[2] != "write") {
				continue
			}
			n, err := nip34.NormalizeRelayURL(t[1])
			if err != nil || slices.Contains(u.writes, n) {
				continue
			}
			if len(u.writes) >= m.o.Config.OutboxRelaysPerParticipant {
				m.m.outboxBounded.WithLabelValues(boundRelaysPerParticipant).Inc()
				break
			}
			u.writes = append(u.writes, n)
		}
		return u, true
	}
	u := update{replyTo: nil}
	for _, t := range evt.Tags {
		if len(t) >= 2 && (t[0] == "e" || t[0] == "E" || t[0] == "q") && nip34.IsHex64(t[1]) && !slices.Contains(u.replyTo, t[1]) {
			u.replyTo = append(u.replyTo, t[1])
			if len(u.replyTo) >= maxReplyRefs {
				break
			}
		}
	}
	if len(u.replyTo) == 0 {
		return update{}, false
	}
	u.people = participants(evt, m.o.Config.OutboxParticipantsPerRoot)
	return u, true
}

// participants are the author and the p-tagged keys of evt, at most n.
func participants(evt *nostr.Event, n int) []string {
	out := []string{evt.PubKey}
	for _, t := range evt.Tags {
		if len(out) >= n {
			break
		}
		if len(t) >= 2 && t[0] == "p" && nip34.IsHex64(strings.ToLower(t[1])) && !slices.Contains(out, t[1]) {
			out = append(out, t[1])
		}
	}
	return out
}

// applyOutbox lands a reply, root or relay list in the participant state
// and marks the repositories whose outbox relays may have changed.
func (m *Manager) applyOutbox(u update, changed map[RepoID]struct{}) {
	ob := m.outbox
	switch {
	case u.writer != "":
		if _, known := ob.writes[u.writer]; !known && len(ob.writes) >= maxWriters {
			return
		}
		ob.writes[u.writer] = u.writes
		if k, ok := ob.keys.lookup(u.writer); ok {
			for _, ei := range ob.rootsOf(k) {
				m.markRoot(ei, changed)
			}
		}
	case u.id != "":
		m.addParticipants(u.id, u.people, changed)
	default:
		for _, root := range u.replyTo {
			if m.repos.EventRepos(root) == nil {
				continue
			}
			m.addParticipants(root, u.people, changed)
		}
	}
}

func (m *Manager) addParticipants(root string, people []string, changed map[RepoID]struct{}) {
	ob := m.outbox
	ei, ok := m.rootPosition(root)
	if !ok {
		return
	}
	var buf [1]uint32
	have := ob.participantsOf(ei, &buf)
	hadAny := len(have) > 0
	added := false
	repos := m.repos.eventRepos(ei)
	for _, p := range people {
		if k, known := ob.keys.lookup(p); known && slices.Contains(have, k) {
			continue
		}
		if len(have) >= m.o.Config.OutboxParticipantsPerRoot {
			m.m.outboxBounded.WithLabelValues(boundParticipantsPerRoot).Inc()
			break
		}
		k := ob.keys.ref(p)
		have = append(have, k)
		if int(k) >= len(ob.roots) {
			ob.roots = append(ob.roots, make([][]uint32, int(k)+1-len(ob.roots))...)
		}
		ob.roots[k] = append(ob.roots[k], ei)
		added = added || len(ob.writes[p]) > 0
		for _, id := range repos {
			m.addPerson(id, p)
		}
	}
	if len(have) == 0 {
		return
	}
	ob.setParticipants(ei, have)
	if !hadAny {
		ob.rootCount++
	}
	if added {
		m.markRoot(ei, changed)
	}
}

func (m *Manager) markRoot(ei uint32, changed map[RepoID]struct{}) {
	for _, id := range m.repos.eventRepos(ei) {
		changed[id] = struct{}{}
	}
}

// refreshOutbox recomputes the outbox relays of repository id: the write
// relays of the participants of its root events, in the order they were
// learned.
func (m *Manager) refreshOutbox(id RepoID) {
	var relays []string
	seen := map[string]struct{}{}
	for _, ei := range m.repos.repos[id].roots {
		var buf [1]uint32
		for _, k := range m.outbox.participantsOf(ei, &buf) {
			for _, w := range m.outbox.writes[m.outbox.keys.key(k)] {
				if _, dup := seen[w]; !dup {
					seen[w] = struct{}{}
					relays = append(relays, w)
				}
			}
		}
	}
	m.repos.SetOutbox(id, relays)
}

// forgetOutbox drops the participants of root events no repository
// references any more. roots are the positions and ids the forgotten
// repository's roots had before it left the index: an id the index still
// finds is listed by another repository, at the same position; the others'
// positions are free and must not keep state for the next root given them.
func (m *Manager) forgetOutbox(roots []uint32, ids [][32]byte) {
	ob := m.outbox
	for i, ei := range roots {
		if _, live := m.repos.findEvent(ids[i]); live {
			continue
		}
		var buf [1]uint32
		for _, k := range ob.participantsOf(ei, &buf) {
			rs := slices.DeleteFunc(ob.roots[k], func(r uint32) bool { return r == ei })
			if len(rs) == 0 {
				rs = nil
			}
			ob.roots[k] = rs
			ob.keys.unref(k)
		}
		if ob.clearParticipants(ei) {
			ob.rootCount--
		}
	}
	if ob.rootCount == 0 {
		// the index restarts its positions once empty
		ob.parts, ob.partLists, ob.partFree = nil, nil, nil
	}
	if ob.keys.len() == 0 {
		ob.roots = nil // so do the keys
	}
}
