package relaysync

import (
	"context"
	"slices"

	"github.com/grasp-dev/grasp/core/nip34"
)

// applyUpdates is the self-subscriber batch landing in RepoSyncIndex, then
// derive_relay_targets → compute_actions for every relay.
func (m *Manager) applyUpdates(batch []update) {
	changed := map[RepoID]struct{}{}
	outboxChanged := map[RepoID]struct{}{}
	for _, u := range batch {
		if u.forget {
			if id, ok := m.repos.Lookup(u.addr); ok {
				delete(outboxChanged, id)
			}
			m.forget(u.addr, changed)
			continue
		}
		if u.held {
			if id, ok := m.repos.HoldAnnouncement(u.addr, u.relays, u.listsSelf); ok {
				m.repos.setArchived(id, u.archived)
				changed[id] = struct{}{}
			}
			continue
		}
		if u.addr != "" {
			id := m.repos.SetAnnouncement(u.addr, u.relays, u.listsSelf)
			m.repos.setArchived(id, u.archived)
			changed[id] = struct{}{}
			if m.o.Config.Outbox {
				author, _ := splitAddr(u.addr)
				m.addPerson(id, author)
			}
			continue
		}
		for _, a := range u.addrs {
			if _, err := m.repos.AddRootEvent(a, u.id); err != nil {
				m.log.Debug("ignoring root event", "error", err)
			}
		}
		if m.o.Config.Outbox {
			m.applyOutbox(u, outboxChanged)
		}
	}
	for id := range outboxChanged {
		m.refreshOutbox(id)
		changed[id] = struct{}{}
	}
	if !m.allRelays {
		for id := range changed {
			m.selectFor(id)
		}
	}
	m.recomputeAll()
}

// selectFor consults the RelaySelector for one repository. On error or
// timeout the repository keeps every relay: a broken plugin must not stop
// sync.
func (m *Manager) selectFor(id RepoID) {
	addr := m.repos.Addr(id)
	relays := m.repos.Relays(id)
	cands := make([]Candidate, len(relays))
	for i, r := range relays {
		cands[i] = Candidate{URL: r, Source: FromAnnouncement, Health: m.health.Health(r)}
	}
	for _, r := range m.repos.Outbox(id) {
		cands = append(cands, Candidate{URL: r, Source: FromOutbox, Health: m.health.Health(r)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.o.SelectTimeout)
	defer cancel()
	pub, ident := splitAddr(addr)
	picked, err := m.o.Selector.SelectRelays(ctx, RepoInfo{Pubkey: pub, Identifier: ident, Address: addr, Archived: m.repos.archived(id)}, cands)
	if err != nil {
		m.log.Warn("relay selection failed; using every listed relay", "repo", addrRepo(addr).URLPath(), "error", err)
		delete(m.sel, addr)
		return
	}
	m.sel[addr] = picked
}

// addrRepo is the repository of the coordinate addr, as log lines name it
// (URLPath).
func addrRepo(addr string) nip34.RepoRef {
	pub, id := splitAddr(addr)
	return nip34.RepoRef{Pubkey: pub, Identifier: id}
}

func splitAddr(addr string) (pubkey, identifier string) {
	rest := addr[len("30617:"):]
	if len(rest) < 65 {
		return rest, ""
	}
	return rest[:64], rest[65:]
}

func (m *Manager) recomputeAll() {
	var capped int
	m.targets, capped = DeriveRelayTargets(m.repos, TargetRules{
		Self: m.o.Self, Bootstrap: m.o.Config.BootstrapRelays, Selection: m.sel, Caps: m.o.caps(), Prev: m.targets,
	})
	m.publishRoles()
	if capped != m.capped {
		if capped > m.capped {
			m.log.Warn("relay caps leave relays out of sync", "left_out", capped, "max_relays_per_repo", m.o.Config.MaxRelaysPerRepo,
				"max_relays", m.o.Config.MaxRelays, "max_held_relays", m.o.Config.MaxHeldRelays)
		}
		m.capped = capped
		m.m.capped.Set(float64(capped))
	}
	m.run(ComputeActions(m.repos, m.targets, m.pending, m.relays, m.o.Config.TagsPerFilter))
	for _, rs := range m.relays {
		m.refreshLayer1(rs)
		m.syncPeople(rs)
	}
}

func (m *Manager) recomputeRelay(url string) {
	t, ok := m.targets[url]
	if !ok {
		return
	}
	m.run(ComputeActions(m.repos, map[string]Targets{url: t}, m.pending, m.relays, m.o.Config.TagsPerFilter))
	if rs := m.relays[url]; rs != nil {
		m.syncPeople(rs)
	}
}

func (m *Manager) run(actions []Action) {
	for _, a := range actions {
		switch a.Kind {
		case ActConnect:
			rs := newRelayState(a.Relay, a.Bootstrap)
			m.relays[a.Relay] = rs
			m.m.tracked.Set(float64(len(m.relays)))
			m.tryConnect(rs)
		case ActAddFilters:
			rs := m.relays[a.Relay]
			if m.coolingDown(a.Relay) {
				continue // the disconnect check retries after the cooldown
			}
			m.addFilters(rs, a)
		}
	}
}

func (m *Manager) coolingDown(url string) bool {
	now := m.clk.Now()
	return m.health.NextAttempt(url, now).After(now)
}

// wanted reports whether url should stay connected.
func (m *Manager) wanted(url string) bool {
	t, ok := m.targets[url]
	return ok && (t.Bootstrap || len(t.Repos) > 0 || t.Held > 0)
}

// checkRelays is the periodic check: it forgets confirmed repositories that
// are no longer targets, closes relays left with nothing to sync (never a
// bootstrap relay), reconnects relays that should be up, and retries work
// dropped by a CLOSED or postponed by a cooldown.
func (m *Manager) checkRelays() {
	urls := make([]string, 0, len(m.relays))
	for u := range m.relays {
		urls = append(urls, u)
	}
	slices.Sort(urls)
	now := m.clk.Now()
	for _, u := range urls {
		rs := m.relays[u]
		t := m.targets[u]
		want := make(map[RepoID]struct{}, len(t.Repos))
		for _, r := range t.Repos {
			want[r] = struct{}{}
		}
		for r := range rs.Confirmed {
			if _, ok := want[r]; !ok {
				delete(rs.Confirmed, r)
			}
		}
		if !rs.Bootstrap && !m.wanted(u) {
			if len(m.pending[u]) == 0 {
				m.log.Info("closing relay with nothing left to sync", "relay", u)
				m.remove(rs)
			}
			continue
		}
		switch rs.Status {
		case Disconnected:
			if rs.reconnectTimer == nil {
				m.tryConnect(rs)
			}
		case Connected:
			switch {
			case rs.layer1 == "" && !m.coolingDown(u):
				since, mode := timestamp(now.Add(-m.o.Config.QuickReconnectWindow.D())), CatchUpReq
				if rs.layer1Owed {
					// the closed layer 1 had not caught up: start where it did
					if rs.layer1From == nil {
						since, mode = nil, m.historyMode()
					} else if *rs.layer1From < *since {
						since = rs.layer1From
					}
				}
				m.subscribeLayer1(rs, since, mode)
			}
		}
	}
	m.recomputeAll()
}

func (m *Manager) remove(rs *RelayState) {
	stopTimer(&rs.dailyTimer)
	stopTimer(&rs.reconnectTimer)
	if rs.Status != Disconnected {
		m.conns.Close(rs.URL)
	}
	m.setStatus(rs, Disconnected)
	m.setFilters(rs, 0)
	m.dropPending(rs.URL)
	delete(m.relays, rs.URL)
	m.m.tracked.Set(float64(len(m.relays)))
	m.m.forget(rs)
}
