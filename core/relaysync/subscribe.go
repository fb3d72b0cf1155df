package relaysync

import (
	"slices"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// subscribeLayer1 opens the relay's layer 1 (layer1Filter), if it has one.
func (m *Manager) subscribeLayer1(rs *RelayState, since *nostr.Timestamp, mode CatchUp) {
	f, key := m.layer1Filter(rs, since)
	if key == "" {
		return
	}
	id := m.newID("l1-")
	rs.layer1 = id
	rs.subs[id] = &subscription{layer1: key, since: since}
	rs.layer1Owed, rs.layer1From = false, nil
	m.setFilters(rs, rs.Filters+1)
	m.conns.Subscribe(rs.URL, id, []nostr.Filter{f}, mode)
}

// layer1All is the key of full discovery.
const layer1All = "all"

// layer1Filter is what layer 1 asks the relay for, and a key that changes
// when that does ("" for nothing):
//   - bootstrap relays and relays a stored repository lists: every
//     announcement, state and grasp list (discovery);
//   - relays connected only for announcements still in purgatory: the
//     announcements and states of those repositories' identifiers, no
//     discovery (audit F26: one held announcement naming a relay let that
//     relay fill the relay-wide held caps with its announcements);
//   - relays synced only as participants' write relays: nothing (anyone's
//     relay lists; only the replies to accepted root events, GRASP-03).
func (m *Manager) layer1Filter(rs *RelayState, since *nostr.Timestamp) (nostr.Filter, string) {
	t := m.targets[rs.URL]
	switch {
	case rs.Bootstrap || (!t.Outbox && len(t.Repos) > 0):
		return AnnouncementFilter(since), layer1All
	case t.Outbox || len(t.HeldRepos) == 0:
		return nostr.Filter{}, ""
	}
	seen := map[string]bool{}
	var ds []string
	for _, id := range t.HeldRepos {
		_, d := splitAddr(m.repos.Addr(id))
		if !seen[d] {
			seen[d] = true
			ds = append(ds, d)
		}
	}
	slices.Sort(ds)
	return HeldRepoFilter(ds, since), "held:" + strings.Join(ds, "\x00")
}

// refreshLayer1 replaces a connected relay's open layer 1 when what it
// should ask for changed (a held repository released or gone, a relay
// promoted to discovery or left only as an outbox relay): the old one is
// closed, the new one asks from full history. A relay without an open
// layer 1 gets one from the periodic check (checkRelays).
func (m *Manager) refreshLayer1(rs *RelayState) {
	s := rs.subs[rs.layer1]
	if rs.Status != Connected || rs.layer1 == "" || s == nil || m.coolingDown(rs.URL) {
		return
	}
	if !rs.Bootstrap && !m.wanted(rs.URL) {
		return // the disconnect check closes it
	}
	if _, want := m.layer1Filter(rs, nil); want == s.layer1 {
		return
	}
	m.conns.Unsubscribe(rs.URL, rs.layer1)
	delete(rs.subs, rs.layer1)
	rs.layer1 = ""
	m.setFilters(rs, rs.Filters-1)
	m.subscribeLayer1(rs, nil, m.historyMode())
}

// subscribeItems opens one subscription per layer 2+3 filter. One filter per
// subscription keeps each REQ small (relays cap message sizes) and lets
// negentropy, which reconciles one filter per session, report per filter.
func (m *Manager) subscribeItems(rs *RelayState, filters []nostr.Filter, mode CatchUp, b *PendingBatch, g *subGroup) {
	for _, f := range filters {
		id := m.newID("s-")
		rs.subs[id] = &subscription{batch: b, items: true, group: g}
		if b != nil {
			b.Outstanding = append(b.Outstanding, id)
			b.subs = append(b.subs, id)
		}
		m.conns.Subscribe(rs.URL, id, []nostr.Filter{f}, mode)
	}
	m.setFilters(rs, rs.Filters+len(filters))
}

func (m *Manager) subscribeBatch(rs *RelayState, items []ItemRange, filters []nostr.Filter) {
	m.nextID++
	b := &PendingBatch{ID: m.nextID, Items: items, CatchUp: m.historyMode()}
	m.pending[rs.URL] = append(m.pending[rs.URL], b)
	m.nPending++
	m.m.pending.Set(float64(m.nPending))
	m.subscribeItems(rs, filters, b.CatchUp, b, newSubGroup(items))
}

// addFilters is handle_add_filters. If the new filters would take the
// connection past ConsolidateAbove it consolidates instead, after the
// pending batches have finished (closing their subscriptions early would
// lose their EOSE); meanwhile the action is dropped and recomputed later.
func (m *Manager) addFilters(rs *RelayState, a Action) {
	if len(a.Filters) == 0 {
		// nothing to ask this relay for (the coordinate of a repository
		// it serves only for outbox): the items are done
		rs.confirm(a.Items)
		return
	}
	if rs.Filters+len(a.Filters) > m.o.Config.ConsolidateAbove {
		if len(m.pending[rs.URL]) > 0 {
			rs.deferred = true
			return
		}
		m.consolidate(rs, a)
		return
	}
	m.subscribeBatch(rs, a.Items, a.Filters)
}

// consolidateBudget is how many layer 2+3 filters a consolidation packs
// into: half the limit, leaving the other half for incremental additions so
// that the next consolidation is not due at the next batch.
func (m *Manager) consolidateBudget() int { return (m.o.Config.ConsolidateAbove - 1) / 2 }

// consolidate closes every layer 2+3 subscription and reopens the confirmed
// items from now − window (so the gap while closed is covered) and the new
// items with full history, packing values into at most half the limit.
// Confirmed state is kept. Layer 1 stays open: it has its own subscription
// id, so nothing forces the gap a close-all would open.
func (m *Manager) consolidate(rs *RelayState, a Action) {
	m.m.consolidations.Inc()
	m.closeItemSubs(rs)
	now := m.clk.Now()
	items := m.confirmedRanges(rs)
	addrs, events := itemValues(m.repos, items, countEvents(items), m.targets[rs.URL].rootsOnly())
	k := PackSize([]ItemCount{{len(addrs), len(events)}, {len(a.Addrs), len(a.Events)}}, m.consolidateBudget(), m.o.Config.TagsPerFilter)
	m.subscribeItems(rs, ItemFilters(addrs, events, k, timestamp(now.Add(-m.o.Config.QuickReconnectWindow.D()))), CatchUpReq, nil, newSubGroup(items))
	m.subscribeBatch(rs, a.Items, ItemFilters(a.Addrs, a.Events, k, nil))
	m.log.Info("consolidated filters", "relay", rs.URL, "filters", rs.Filters, "values_per_filter", k)
}

// resubscribeConfirmed is rebuild_layer2_and_layer3 for a quick reconnect:
// everything confirmed, from since, packed like a consolidation. These are
// catch-up subscriptions, not a pending batch: the items stay confirmed.
func (m *Manager) resubscribeConfirmed(rs *RelayState, since time.Time) {
	items := m.confirmedRanges(rs)
	if len(items) == 0 {
		return
	}
	addrs, events := itemValues(m.repos, items, countEvents(items), m.targets[rs.URL].rootsOnly())
	k := PackSize([]ItemCount{{len(addrs), len(events)}}, m.consolidateBudget(), m.o.Config.TagsPerFilter)
	m.subscribeItems(rs, ItemFilters(addrs, events, k, timestamp(since)), CatchUpReq, nil, newSubGroup(items))
}

// confirmedRanges is the confirmed prefix of every repository still targeted
// at the relay; repositories no longer targeted are forgotten here.
func (m *Manager) confirmedRanges(rs *RelayState) []ItemRange {
	want := map[RepoID]struct{}{}
	for _, r := range m.targets[rs.URL].Repos {
		want[r] = struct{}{}
	}
	items := make([]ItemRange, 0, len(rs.Confirmed))
	for r, n := range rs.Confirmed {
		if _, ok := want[r]; !ok {
			delete(rs.Confirmed, r)
			continue
		}
		if n > 0 {
			items = append(items, ItemRange{Repo: r, From: 0, To: n})
		}
	}
	return items
}

func countEvents(items []ItemRange) int {
	n := 0
	for _, it := range items {
		n += int(it.To - max(it.From, 1))
	}
	return n
}

func (m *Manager) closeItemSubs(rs *RelayState) {
	m.closeSubs(rs, func(s *subscription) bool { return s.items })
}

// closeSubs closes the subscriptions of rs that which picks, and counts
// them out of its filters.
func (m *Manager) closeSubs(rs *RelayState, which func(*subscription) bool) {
	n := 0
	for id, s := range rs.subs {
		if which(s) {
			m.conns.Unsubscribe(rs.URL, id)
			delete(rs.subs, id)
			n++
		}
	}
	m.setFilters(rs, rs.Filters-n)
}

// onDone confirms a batch once its last subscription is done; if an
// AddFilters was waiting for the relay's batches to finish, it is recomputed.
func (m *Manager) onDone(url, subID string) {
	rs := m.relays[url]
	if rs == nil {
		return
	}
	s := rs.subs[subID]
	if s == nil {
		return
	}
	s.caughtUp = true
	if s.batch == nil {
		return
	}
	b := s.batch
	s.batch = nil
	if !b.done(subID) {
		return
	}
	m.removeBatch(url, b)
	rs.confirm(b.Items)
	m.m.confirmed.Inc()
	if len(m.pending[url]) == 0 && rs.deferred {
		rs.deferred = false
		m.recomputeRelay(url)
	}
}

// onClosed handles a CLOSED: a rate-limit reason starts the cooldown; a
// subscription of a pending batch takes the whole batch down, so its items
// are asked for again by the next compute_actions (after the cooldown).
func (m *Manager) onClosed(url, subID, reason string) {
	rs := m.relays[url]
	if rs == nil {
		return
	}
	s := rs.subs[subID]
	if s == nil {
		return
	}
	delete(rs.subs, subID)
	m.setFilters(rs, rs.Filters-1)
	if subID == rs.layer1 {
		rs.layer1 = ""
		if !s.caughtUp {
			rs.layer1Owed, rs.layer1From = true, s.since
		}
	}
	if s.people {
		rs.peopleFilters--
		m.onPeopleClosed(rs)
	}
	if IsRateLimit(reason) {
		m.health.RateLimited(url, m.clk.Now())
	}
	m.log.Warn("relay closed a subscription", "relay", url, "sub", subID, "reason", reason)
	if s.batch == nil {
		if s.group != nil {
			m.unconfirm(rs, s.group, !s.caughtUp)
		}
		return
	}
	b := s.batch
	for _, id := range b.subs {
		if other := rs.subs[id]; other != nil {
			m.conns.Unsubscribe(url, id)
			delete(rs.subs, id)
			m.setFilters(rs, rs.Filters-1)
		}
	}
	m.removeBatch(url, b)
	if len(m.pending[url]) == 0 && rs.deferred {
		rs.deferred = false
		m.recomputeRelay(url)
	}
}

// unconfirm handles a closed item subscription outside a pending batch: a
// quick reconnect's or a consolidation's catch-up of confirmed items, or a
// live subscription. Either what its catch-up was to bring or what arrives
// from now on would be missed, so its repositories are no longer confirmed
// on this relay and the subscriptions serving them are closed; the next
// compute_actions asks for them again from full history: at once for a
// catch-up that failed (the new request is a pending batch, whose own CLOSED
// waits for the periodic check), else from the periodic check, so a relay
// that closes every live subscription after its EOSE cannot spin us.
func (m *Manager) unconfirm(rs *RelayState, g *subGroup, now bool) {
	m.closeSubs(rs, func(s *subscription) bool { return s.group == g && s.batch == nil })
	for r := range g.repos {
		delete(rs.Confirmed, r)
	}
	rs.ahead = slices.DeleteFunc(rs.ahead, func(it ItemRange) bool {
		_, in := g.repos[it.Repo]
		return in
	})
	m.m.unconfirmed.Add(float64(len(g.repos)))
	m.log.Info("subscription closed before it could be trusted; asking for its repositories again", "relay", rs.URL, "repos", len(g.repos))
	if now {
		m.recomputeRelay(rs.URL)
	}
}

func (m *Manager) removeBatch(url string, b *PendingBatch) {
	bs := m.pending[url]
	for i, x := range bs {
		if x == b {
			bs = append(bs[:i], bs[i+1:]...)
			m.nPending--
			break
		}
	}
	if len(bs) == 0 {
		delete(m.pending, url)
	} else {
		m.pending[url] = bs
	}
	m.m.pending.Set(float64(m.nPending))
}

func (m *Manager) dropPending(url string) {
	m.nPending -= len(m.pending[url])
	delete(m.pending, url)
	m.m.pending.Set(float64(m.nPending))
}
