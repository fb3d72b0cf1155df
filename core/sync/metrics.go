package sync

import "github.com/prometheus/client_golang/prometheus"

// metrics are always collected; they are exported only if a Registerer is given.
type metrics struct {
	relayConnected *prometheus.GaugeVec
	filters        *prometheus.GaugeVec
	attempts       *prometheus.CounterVec
	tracked        prometheus.Gauge
	connected      prometheus.Gauge
	pending        prometheus.Gauge
	confirmed      prometheus.Counter
	consolidations prometheus.Counter
	daily          prometheus.Counter
	capped         prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		relayConnected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_sync_relay_connected", Help: "1 if the sync connection to the relay is up, else 0.",
		}, []string{"relay"}),
		filters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_sync_filters", Help: "Filters (one per subscription) open on the relay connection.",
		}, []string{"relay"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_connection_attempts_total", Help: "Connection outcomes per relay: ok, failed (never came up), lost (dropped after connecting).",
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
		daily: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_sync_daily_syncs_total", Help: "Daily fresh syncs started.",
		}),
		capped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_relays_capped", Help: "Relays listed by synced repositories that sync.max_relays_per_repo, max_relays or max_held_relays leave out.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.relayConnected, m.filters, m.attempts, m.tracked, m.connected, m.pending, m.confirmed, m.consolidations, m.daily, m.capped} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) forget(url string) {
	m.relayConnected.DeleteLabelValues(url)
	m.filters.DeleteLabelValues(url)
	m.attempts.DeletePartialMatch(prometheus.Labels{"relay": url})
}
