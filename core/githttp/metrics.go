package githttp

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
	// GRASP-06 /prs/ pushes
	prsPushes  *prometheus.CounterVec // result
	prsRefused *prometheus.CounterVec // reason
	prsBytes   prometheus.Counter
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
		prsPushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "prs", Name: "pushes_total",
			Help: "GRASP-06 /prs/ pushes by result (accepted, refused, failed).",
		}, []string{"result"}),
		prsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "prs", Name: "refused_total",
			Help: "GRASP-06 /prs/ pushes refused, by reason: namespace (a ref outside refs/nostr/<id>), misfit (a PR event naming another /prs/ path), pr_mismatch (not the PR's tip), bad_ref, stale, malformed, quota (placeholder quotas), too_large, disk, busy, busy_ip, slow_body, gate, git (refused by git itself, e.g. fsck), error.",
		}, []string{"reason"}),
		prsBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "prs", Name: "bytes_total",
			Help: "Request bytes of accepted GRASP-06 /prs/ pushes.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.ops, m.bytes, m.auth, m.duration, m.refused, m.prsPushes, m.prsRefused, m.prsBytes)
	}
	return m
}
