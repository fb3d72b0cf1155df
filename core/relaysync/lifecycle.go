package relaysync

import "time"

// tryConnect connects now if the health tracker allows it, else arms the
// reconnect timer for when it will.
func (m *Manager) tryConnect(rs *RelayState) {
	now := m.clk.Now()
	if next := m.health.NextAttempt(rs.URL, now); next.After(now) {
		m.scheduleReconnect(rs, next.Sub(now))
		return
	}
	stopTimer(&rs.reconnectTimer)
	m.setStatus(rs, Connecting)
	rs.connectStarted = now
	m.conns.Connect(rs.URL)
}

func (m *Manager) scheduleReconnect(rs *RelayState, d time.Duration) {
	stopTimer(&rs.reconnectTimer)
	rs.reconnectGen++
	gen, url := rs.reconnectGen, rs.URL
	rs.reconnectTimer = m.clk.AfterFunc(d, func() {
		m.send(func() { m.onReconnectDue(url, gen) })
	})
}

func (m *Manager) onReconnectDue(url string, gen uint64) {
	rs := m.relays[url]
	if rs == nil || rs.reconnectGen != gen || rs.Status != Disconnected {
		return
	}
	rs.reconnectTimer = nil
	if !rs.Bootstrap && !m.wanted(url) {
		m.remove(rs)
		return
	}
	m.tryConnect(rs)
}

// onConnected is handle_connect_or_reconnect: a fresh sync (never connected,
// or gone longer than the quick-reconnect window) clears confirmed state and
// asks for full history; a quick reconnect resubscribes what was confirmed
// from just before the gap. Either way compute_actions then adds what is new.
func (m *Manager) onConnected(url string) {
	rs := m.relays[url]
	if rs == nil {
		m.conns.Close(url) // removed while the connection was being made
		return
	}
	if rs.Status == Connected {
		return
	}
	now := m.clk.Now()
	m.health.Succeeded(url, now, now.Sub(rs.connectStarted))
	m.m.attempts.WithLabelValues(relayLabel(rs), "ok").Inc()
	stopTimer(&rs.reconnectTimer)
	fresh, since := ReconnectPlan(rs.LastConnected, now, m.o.Config.QuickReconnectWindow.D())
	m.setStatus(rs, Connected)
	rs.LastConnected, rs.DisconnectedAt = now, time.Time{}
	if fresh {
		rs.ClearSyncState()
		m.subscribeLayer1(rs, nil, m.historyMode())
		m.log.Debug("fresh sync", "relay", url)
	} else {
		m.subscribeLayer1(rs, timestamp(since), CatchUpReq)
		m.resubscribeConfirmed(rs, since)
		m.resubscribePeople(rs, timestamp(since))
		m.log.Debug("quick reconnect", "relay", url, "since", since)
	}
	if rs.dailyTimer == nil {
		m.armDaily(rs)
	}
	m.recomputeRelay(url)
}

// onDisconnected records the failure, clears the relay's pending batches
// (their subscriptions died with the connection) and schedules a reconnect
// if the relay is still wanted.
func (m *Manager) onDisconnected(url string, err error) {
	rs := m.relays[url]
	if rs == nil || rs.Status == Disconnected {
		return
	}
	now := m.clk.Now()
	m.health.Failed(url, now)
	if rs.Status == Connected {
		m.m.attempts.WithLabelValues(relayLabel(rs), "lost").Inc()
		rs.LastConnected, rs.DisconnectedAt = now, now
		m.log.Info("relay connection lost", "relay", url, "error", err)
	} else {
		m.m.attempts.WithLabelValues(relayLabel(rs), "failed").Inc()
		m.log.Debug("relay connection failed", "relay", url, "error", err)
	}
	m.setStatus(rs, Disconnected)
	m.dropPending(url)
	clear(rs.subs)
	rs.layer1, rs.deferred, rs.ahead, rs.peopleFilters = "", false, nil, 0
	m.setFilters(rs, 0)
	if !rs.Bootstrap && !m.wanted(url) {
		m.remove(rs)
		return
	}
	m.tryConnect(rs)
}

func (m *Manager) armDaily(rs *RelayState) {
	rs.dailyGen++
	gen, url := rs.dailyGen, rs.URL
	d := DailyDelay(m.o.Config.DailyMin.D(), m.o.Config.DailyMax.D(), m.o.Rand())
	rs.dailyTimer = m.clk.AfterFunc(d, func() {
		m.send(func() { m.onDaily(url, gen) })
	})
}

// onDaily is the daily fresh sync: not a consolidation but a full refetch,
// which repairs any drift between what we think is confirmed and what the
// relay has. A disconnected relay gets it on its next connect.
func (m *Manager) onDaily(url string, gen uint64) {
	rs := m.relays[url]
	if rs == nil || rs.dailyGen != gen {
		return
	}
	rs.dailyTimer = nil
	m.armDaily(rs)
	m.m.daily.Inc()
	rs.ClearSyncState()
	if rs.Status != Connected {
		rs.LastConnected = time.Time{}
		return
	}
	m.log.Info("daily fresh sync", "relay", url)
	for id := range rs.subs {
		m.conns.Unsubscribe(url, id)
	}
	clear(rs.subs)
	m.dropPending(url)
	rs.layer1, rs.deferred, rs.peopleFilters = "", false, 0
	m.setFilters(rs, 0)
	m.subscribeLayer1(rs, nil, m.historyMode())
	m.recomputeRelay(url)
}

func (m *Manager) historyMode() CatchUp {
	if m.o.Config.Negentropy {
		return CatchUpNegentropy
	}
	return CatchUpReq
}

func (m *Manager) setStatus(rs *RelayState, s ConnStatus) {
	was := rs.Status
	rs.Status = s
	if (was == Connected) != (s == Connected) {
		up := 0.0
		if s == Connected {
			m.nConn++
			up = 1
		} else {
			m.nConn--
		}
		if rs.Bootstrap {
			m.m.relayConnected.WithLabelValues(rs.URL).Set(up)
		}
		m.m.connected.Set(float64(m.nConn))
		if m.targets[rs.URL].Outbox {
			m.countOutboxUp()
		}
	}
}

func (m *Manager) setFilters(rs *RelayState, n int) {
	m.nFilters += n - rs.Filters
	rs.Filters = n
	m.m.filtersOpen.Set(float64(m.nFilters))
	if rs.Bootstrap {
		m.m.filters.WithLabelValues(rs.URL).Set(float64(n))
	}
}
