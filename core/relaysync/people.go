package relaysync

import (
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// GRASP-03 part 2: the profiles (kind 0), relay lists (10002) and GRASP
// server lists (10317) of the people of each synced repository — its
// announcement's author and the participants of its root events — are
// synced from the repository's relays and from the bootstrap relays. The
// relay lists are what the outbox lookup reads, and clients find the
// profiles of a conversation here. Outbox relays are never asked for them:
// they are asked only for replies.
//
// A repository's people form an append-only sequence, like its items; per
// relay, how long a prefix of each repository's sequence has been
// subscribed is kept, so a relay's state is a number per repository, not a
// set of keys. These are replaceable events, at most three per person and
// relay, so they are not confirmed batch by batch: like layer 1 they are
// asked again in full on a fresh connection and the daily resync, and from
// just before the gap on a quick reconnect.

// PeopleKinds are the kinds synced for the people of a repository.
var PeopleKinds = []int{0, KindRelayList, 10317, 10617, 10018}

// maxPeoplePerRepo bounds one repository's people sequence. Participants
// per root are bounded by config; this caps a repository with thousands of
// root events, whose further people are still followed for outbox (their
// relay lists arrive when they publish here or from layer 1's relays).
const maxPeoplePerRepo = 2000

// peopleFilterBudget is how many people filters one connection may hold
// before they are packed into fewer.
func (m *Manager) peopleFilterBudget() int { return max(2, m.o.Config.ConsolidateAbove/10) }

// addPerson appends pubkey to the people of repository id.
func (m *Manager) addPerson(id RepoID, pubkey string) {
	ob := m.outbox
	seq := ob.people[id]
	if len(seq) >= maxPeoplePerRepo {
		return
	}
	if k, known := ob.keys.lookup(pubkey); known && slices.Contains(seq, k) {
		return
	}
	ob.people[id] = append(seq, ob.keys.ref(pubkey))
}

// forgetPeople drops repository id's people, whose id is about to be reused.
func (m *Manager) forgetPeople(id RepoID) {
	for _, k := range m.outbox.people[id] {
		m.outbox.keys.unref(k)
	}
	delete(m.outbox.people, id)
}

// peopleRepos are the repositories whose people relay rs is asked for:
// every synced one on a bootstrap relay, on another relay the ones whose
// announcement lists it (not those it serves only as an outbox relay).
func (m *Manager) peopleRepos(rs *RelayState, buf []RepoID) []RepoID {
	t := m.targets[rs.URL]
	if t.Bootstrap {
		for id := range m.outbox.people {
			if e := &m.repos.repos[id]; !e.held && synced(e) {
				buf = append(buf, id)
			}
		}
		return buf
	}
	for _, id := range t.Repos {
		if !slices.Contains(t.OutboxRepos, id) {
			buf = append(buf, id)
		}
	}
	return buf
}

// syncPeople subscribes a connected relay to the people it has not been
// asked for yet. When the new filters would take it past its people budget,
// every people subscription is replaced by packed ones: those asked before
// from just before now (their history is in), the new ones in full.
func (m *Manager) syncPeople(rs *RelayState) {
	if !m.o.Config.Outbox || rs.Status != Connected || m.coolingDown(rs.URL) {
		return
	}
	var fresh []string
	seen := map[uint32]struct{}{}
	for _, id := range m.peopleRepos(rs, nil) {
		seq := m.outbox.people[id]
		have := rs.people[id]
		if int(have) >= len(seq) {
			continue
		}
		for _, k := range seq[have:] {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				fresh = append(fresh, m.outbox.keys.key(k))
			}
		}
		if rs.people == nil {
			rs.people = map[RepoID]uint32{}
		}
		rs.people[id] = uint32(len(seq))
	}
	if len(fresh) == 0 {
		return
	}
	budget := m.peopleFilterBudget()
	if rs.peopleFilters+ceilDiv(len(fresh), m.o.Config.TagsPerFilter) <= budget {
		m.subscribePeople(rs, fresh, nil, m.historyMode(), budget-rs.peopleFilters)
		return
	}
	// pack: everyone asked before, then the new ones
	var old []string
	for id, n := range rs.people {
		seq := m.outbox.people[id]
		for _, k := range seq[:min(int(n), len(seq))] {
			if _, isNew := seen[k]; !isNew {
				seen[k] = struct{}{}
				old = append(old, m.outbox.keys.key(k))
			}
		}
	}
	m.closePeople(rs)
	m.subscribePeople(rs, old, timestamp(m.clk.Now().Add(-m.o.Config.QuickReconnectWindow.D())), CatchUpReq, budget/2)
	m.subscribePeople(rs, fresh, nil, m.historyMode(), budget-budget/2)
	m.log.Info("packed people filters", "relay", rs.URL, "people", len(old)+len(fresh), "filters", rs.peopleFilters)
}

// subscribePeople opens one subscription per chunk of authors, chunks of
// tags_per_filter or, when that takes more than slots filters, larger.
func (m *Manager) subscribePeople(rs *RelayState, authors []string, since *nostr.Timestamp, mode CatchUp, slots int) {
	if len(authors) == 0 {
		return
	}
	per := max(m.o.Config.TagsPerFilter, ceilDiv(len(authors), max(1, slots)))
	for start := 0; start < len(authors); start += per {
		end := min(start+per, len(authors))
		id := m.newID("p-")
		rs.subs[id] = &subscription{people: true}
		f := nostr.Filter{Kinds: slices.Clone(PeopleKinds), Authors: authors[start:end:end], Since: since}
		m.conns.Subscribe(rs.URL, id, []nostr.Filter{f}, mode)
		rs.peopleFilters++
		m.setFilters(rs, rs.Filters+1)
	}
}

// closePeople closes every people subscription of rs.
func (m *Manager) closePeople(rs *RelayState) {
	m.closeSubs(rs, func(s *subscription) bool { return s.people })
	rs.peopleFilters = 0
}

// resubscribePeople asks a quickly reconnected relay again for the people
// it was asked for, from since.
func (m *Manager) resubscribePeople(rs *RelayState, since *nostr.Timestamp) {
	rs.peopleFilters = 0
	if !m.o.Config.Outbox {
		return
	}
	seen := map[uint32]struct{}{}
	var all []string
	for id, n := range rs.people {
		seq := m.outbox.people[id]
		for _, k := range seq[:min(int(n), len(seq))] {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				all = append(all, m.outbox.keys.key(k))
			}
		}
	}
	m.subscribePeople(rs, all, since, CatchUpReq, m.peopleFilterBudget())
}

// onPeopleClosed handles a CLOSED of a people subscription: every people
// subscription of the relay goes, and the next recompute asks again in
// full (after the cooldown of a rate limit).
func (m *Manager) onPeopleClosed(rs *RelayState) {
	m.closePeople(rs)
	rs.people = nil
}
