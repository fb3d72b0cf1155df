package catchup

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// sourceLabel is the event source these counters report, matching the
// pipeline's Meta.Source naming so dashboards can sum across packages.
const sourceLabel = "catchup"

// metrics are always collected; they are exported only with a Registerer.
// No relay label: peers come from untrusted announcements, so their number
// is unbounded. Logs carry the relay.
type metrics struct {
	runs      *prometheus.CounterVec // method, result
	events    *prometheus.CounterVec // source, result
	gaps      prometheus.Counter
	fallbacks *prometheus.CounterVec // reason
	bytes     *prometheus.CounterVec // direction
	duration  *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_catchup_runs_total", Help: "Catch-up runs by the method that finished them (negentropy, req) and result (ok, error, canceled).",
		}, []string{"method", "result"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_catchup_events_total", Help: "Events received by catch-up: delivered (accepted by the pipeline), rejected, bad (failed id/signature/filter checks), known (already stored).",
		}, []string{"source", "result"}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_catchup_gap_events_total", Help: "Events catch-up found that live sync had missed (accepted and not stored before).",
		}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_catchup_fallbacks_total", Help: "Negentropy attempts that fell back to REQ paging, by reason (notice, error, timeout, connection, protocol).",
		}, []string{"reason"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_catchup_bytes_total", Help: "Websocket payload bytes of catch-up sessions, by direction (sent, received).",
		}, []string{"direction"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "grasp_catchup_duration_seconds", Help: "Wall time of catch-up runs by method.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 9),
		}, []string{"method"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.runs, m.events, m.gaps, m.fallbacks, m.bytes, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(res Result, err error) {
	result := "ok"
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		result = "canceled"
	case err != nil:
		result = "error"
	}
	m.runs.WithLabelValues(string(res.Method), result).Inc()
	m.bytes.WithLabelValues("sent").Add(float64(res.BytesSent))
	m.bytes.WithLabelValues("received").Add(float64(res.BytesReceived))
	m.duration.WithLabelValues(string(res.Method)).Observe(res.Duration.Seconds())
}
