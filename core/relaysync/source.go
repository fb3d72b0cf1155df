package relaysync

import "sync/atomic"

// RelaySource says why sync is connected to a relay: what the connection
// layer labels the events it pulls in with, and which bounds apply.
type RelaySource string

const (
	SourceBootstrap RelaySource = "bootstrap" // sync.bootstrap_relays
	SourceRepo      RelaySource = "repo"      // listed by a synced repository's announcement
	SourceOutbox    RelaySource = "outbox"    // only a participant's NIP-65 write relay (GRASP-03)
)

// RelayRole is what the connection layer needs to know about a relay.
type RelayRole struct {
	Source RelaySource
	// EventsPerDay bounds the events taken from the relay in a UTC day,
	// live and catch-up together; 0 is unbounded. Outbox relays come from
	// anyone's relay list, so they get sync.outbox_events_per_relay_per_day.
	EventsPerDay int
}

// roles is the published url → role of the relays that are not plain
// repository relays, replaced whole on every recompute so that Role reads
// it without the actor.
type roles = atomic.Pointer[map[string]RelayRole]

// Role reports why sync is connected to url. It is safe to call from any
// goroutine (the connection layer calls it per event) and reflects the
// targets of the last recompute; a relay it does not know is a repository
// relay.
func (m *Manager) Role(url string) RelayRole {
	if p := m.roles.Load(); p != nil {
		if r, ok := (*p)[url]; ok {
			return r
		}
	}
	return RelayRole{Source: SourceRepo}
}

// publishRoles is called by the actor after the targets change.
func (m *Manager) publishRoles() {
	out := make(map[string]RelayRole)
	outbox, up := 0, 0
	for u, t := range m.targets {
		switch {
		case t.Bootstrap:
			out[u] = RelayRole{Source: SourceBootstrap}
		case t.Outbox:
			out[u] = RelayRole{Source: SourceOutbox, EventsPerDay: m.o.Config.OutboxEventsPerRelayPerDay}
			outbox++
			if rs := m.relays[u]; rs != nil && rs.Status == Connected {
				up++
			}
		}
	}
	m.roles.Store(&out)
	m.m.outbox.Set(float64(outbox))
	m.m.outboxUp.Set(float64(up))
}

// countOutboxUp refreshes grasp_sync_outbox_relays_connected after a
// connection comes up or goes down.
func (m *Manager) countOutboxUp() {
	up := 0
	for u, t := range m.targets {
		if t.Outbox && !t.Bootstrap {
			if rs := m.relays[u]; rs != nil && rs.Status == Connected {
				up++
			}
		}
	}
	m.m.outboxUp.Set(float64(up))
}
