package relaysync

import "github.com/prometheus/client_golang/prometheus"

// otherRelays is the relay label of every relay that is not a bootstrap
// relay: relay URLs come from strangers' announcements, and labelling series
// with them let one announcement create thousands (audit F14).
const otherRelays = "other"

func relayLabel(rs *RelayState) string {
	if rs.Bootstrap {
		return rs.URL
	}
	return otherRelays
}

// metrics are always collected; they are exported only if a Registerer is
// given. Per-relay series exist for the operator's bootstrap relays only.
type metrics struct {
	relayConnected *prometheus.GaugeVec // bootstrap relays
	filters        *prometheus.GaugeVec // bootstrap relays
	filtersOpen    prometheus.Gauge
	attempts       *prometheus.CounterVec
	tracked        prometheus.Gauge
	connected      prometheus.Gauge
	pending        prometheus.Gauge
	confirmed      prometheus.Counter
	consolidations prometheus.Counter
	unconfirmed    prometheus.Counter
	daily          prometheus.Counter
	capped         prometheus.Gauge
	outbox         prometheus.Gauge
	outboxUp       prometheus.Gauge
	outboxBounded  *prometheus.CounterVec // bound
}

// Labels of grasp_sync_outbox_bounded_total: which GRASP-03 bound cut a
// relay list or a conversation short.
const (
	boundRelaysPerParticipant = "outbox_relays_per_participant"
	boundParticipantsPerRoot  = "outbox_participants_per_root"
)

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		relayConnected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_sync_relay_connected", Help: "1 if the sync connection to the bootstrap relay is up, else 0.",
		}, []string{"relay"}),
		filters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_sync_filters", Help: "Filters (one per subscription) open on the bootstrap relay's connection.",
		}, []string{"relay"}),
		filtersOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_filters_open", Help: "Filters (one per subscription) open on every sync connection.",
		}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_connection_attempts_total", Help: "Connection outcomes (ok, failed: never came up, lost: dropped after connecting) per bootstrap relay; relay=\"other\" sums the relays taken from announcements.",
		}, []string{"relay", "result"}),
		tracked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_relays_tracked", Help: "Relays the sync manager is tracking.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_relays_connected", Help: "Relays currently connected.",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_pending_batches", Help: "Subscription batches waiting for EOSE or negentropy.",
		}),
		confirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_sync_batches_confirmed_total", Help: "Subscription batches fully confirmed.",
		}),
		consolidations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_sync_consolidations_total", Help: "Filter consolidations (a connection would have exceeded consolidate_above).",
		}),
		unconfirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_sync_repos_unconfirmed_total", Help: "Repositories asked for again from full history because a subscription serving them closed before its catch-up could be trusted.",
		}),
		daily: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_sync_daily_syncs_total", Help: "Daily fresh syncs started.",
		}),
		outbox: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_outbox_relays", Help: "Relays synced only as participants' NIP-65 write relays (GRASP-03), at most sync.max_outbox_relays.",
		}),
		outboxUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_outbox_relays_connected", Help: "Outbox relays (grasp_sync_outbox_relays) whose connection is up.",
		}),
		outboxBounded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_outbox_bounded_total", Help: "Relay lists (bound=outbox_relays_per_participant) and root events (bound=outbox_participants_per_root) a GRASP-03 bound cut short; sync.max_outbox_relays shows in grasp_sync_relays_capped, the daily bound in grasp_sync_pulled_events_total{result=\"over_daily_bound\"}.",
		}, []string{"bound"}),
		capped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_relays_capped", Help: "Relays listed by synced repositories (or needed as their outbox relays) that sync.max_relays_per_repo, max_relays, max_held_relays or max_outbox_relays leave out.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.relayConnected, m.filters, m.filtersOpen, m.attempts, m.tracked, m.connected, m.pending, m.confirmed, m.consolidations, m.unconfirmed, m.daily, m.capped, m.outbox, m.outboxUp, m.outboxBounded} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) forget(rs *RelayState) {
	if !rs.Bootstrap {
		return
	}
	m.relayConnected.DeleteLabelValues(rs.URL)
	m.filters.DeleteLabelValues(rs.URL)
	m.attempts.DeletePartialMatch(prometheus.Labels{"relay": rs.URL})
}
