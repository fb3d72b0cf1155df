package git

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the collectors of the git layer. They always exist so code
// never checks for nil; they are registered only when a Registerer is given.
type metrics struct {
	ops      *prometheus.CounterVec   // kind, result
	bytes    *prometheus.CounterVec   // direction, kind
	auth     *prometheus.CounterVec   // result, class
	duration *prometheus.HistogramVec // kind
	refused  *prometheus.CounterVec   // reason
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "git", Name: "operations_total",
			Help: "Git smart-HTTP operations by kind (ls, clone, fetch, push) and result.",
		}, []string{"kind", "result"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "git", Name: "bytes_total",
			Help: "Git smart-HTTP payload bytes by direction (in = request body, out = response body) and kind.",
		}, []string{"direction", "kind"}),
		auth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "git", Name: "push_authorisations_total",
			Help: "Push authorisation decisions by result (accepted, rejected) and reason class.",
		}, []string{"result", "class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "grasp", Subsystem: "git", Name: "operation_duration_seconds",
			Help:    "Duration of git smart-HTTP operations by kind.",
			Buckets: []float64{0.005, 0.02, 0.1, 0.5, 1, 2.5, 5, 15, 60, 300, 1800},
		}, []string{"kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "git", Name: "refused_total",
			Help: "Git requests refused by a limit: busy (no process slot), busy_ip (the IP's share of slots), slow_body, too_large, quota, disk, read_only (a push to a read-only GRASP-05 archive).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.ops, m.bytes, m.auth, m.duration, m.refused)
	}
	return m
}
