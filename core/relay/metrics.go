package relay

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	received *prometheus.CounterVec
	stored   *prometheus.CounterVec
	rejected *prometheus.CounterVec
	outcomes *prometheus.CounterVec
	deleted  prometheus.Counter
	inflight prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "relay", Name: "events_received_total",
			Help: "Events that reached the relay's checks, by kind and source.",
		}, []string{"kind", "source"}),
		stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "relay", Name: "events_stored_total",
			Help: "Events written to the main store, by kind.",
		}, []string{"kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "relay", Name: "events_rejected_total",
			Help: "Events answered OK false, by kind and reason class (the NIP-01 prefix).",
		}, []string{"kind", "reason"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "relay", Name: "events_not_stored_total",
			Help: "Events answered OK true without being stored: duplicate, shadow or hold (purgatory).",
		}, []string{"kind", "outcome"}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "relay", Name: "events_deleted_total",
			Help: "Events removed from the store by NIP-09 deletions and replacements.",
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "grasp", Subsystem: "relay", Name: "inflight_writes",
			Help: "Store writes in progress; graceful shutdown waits for them.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.received, m.stored, m.rejected, m.outcomes, m.deleted, m.inflight} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay collector: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) outcome(kind, outcome string) {
	m.outcomes.WithLabelValues(kind, outcome).Inc()
}

// kindLabel keeps the label set small: the kinds a git relay cares about get
// their own series, everything else is "other".
func kindLabel(kind int) string {
	switch kind {
	case 0, 1, 3, 5, 6, 7, 16, 1111, 1617, 1618, 1619, 1621, 1622, 1630, 1631, 1632, 1633,
		10002, 10317, 30617, 30618:
		return strconv.Itoa(kind)
	}
	return "other"
}
