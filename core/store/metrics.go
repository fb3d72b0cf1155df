package store

import (
	"errors"
	"fmt"

	"github.com/fiatjaf/eventstore"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/outcome"
)

type metrics struct {
	writes       *prometheus.CounterVec   // op, result
	queries      *prometheus.CounterVec   // kind
	saveSeconds  *prometheus.HistogramVec // op: submit to durable answer
	batchOps     prometheus.Histogram
	syncSeconds  prometheus.Histogram
	sizeBytes    *prometheus.GaugeVec // part
	keys         prometheus.Gauge
	sideEntries  prometheus.Gauge
	sideExpired  prometheus.Counter
	vlogRewrites prometheus.Counter
	readOnly     prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_store_writes_total",
			Help: "Event writes by operation (save, replace, delete) and result (ok, duplicate, invalid, error).",
		}, []string{"op", "result"}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_store_queries_total",
			Help: "Event queries by kind (req, negentropy, count; negentropy_index: NIP-77 sessions answered from the in-memory index instead of a query; negentropy_set: on PostgreSQL, from one query of (created_at, id) pairs).",
		}, []string{"kind"}),
		saveSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "grasp_store_write_seconds",
			Help:    "Time from an event write's submission to its durable result.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"op"}),
		batchOps: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "grasp_store_batch_ops",
			Help:    "Writes (events and side-table barriers) sharing one group-commit fsync; on PostgreSQL, new events sharing one INSERT and its commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		syncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "grasp_store_sync_seconds",
			Help:    "Duration of one group-commit fsync.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		sizeBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_store_size_bytes",
			Help: "On-disk size of the store by part (lsm, vlog, wal, other), as of the last maintenance.",
		}, []string{"part"}),
		keys: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_store_keys",
			Help: "Keys in the store's tables (events, indexes, side entries; approximate), as of the last maintenance.",
		}),
		sideEntries: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_store_side_entries",
			Help: "Live side-table entries, as of the last maintenance.",
		}),
		sideExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_store_side_expired_removed_total",
			Help: "Expired side-table entries removed by maintenance.",
		}),
		vlogRewrites: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_store_vlog_gc_rewrites_total",
			Help: "Value-log files rewritten by garbage collection.",
		}),
		readOnly: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_store_read_only",
			Help: "1 when the store was opened read-only because the disk was full at start: every write is refused until space is freed and grasp restarted.",
		}),
	}
}

// register adds the collectors, and the backend's own (extra), to reg; a
// nil reg registers nothing.
func (m *metrics) register(reg prometheus.Registerer, extra ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	cs := []prometheus.Collector{m.writes, m.queries, m.saveSeconds, m.batchOps,
		m.syncSeconds, m.sizeBytes, m.keys, m.sideEntries, m.sideExpired, m.vlogRewrites, m.readOnly}
	cs = append(cs, extra...)
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("store: register metrics: %w", err)
		}
	}
	return nil
}

func (m *metrics) countWrite(kind opKind, err error) {
	m.writes.WithLabelValues(kind.String(), writeResult(err)).Inc()
}

func writeResult(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, eventstore.ErrDupEvent):
		return "duplicate"
	case isInvalid(err):
		return "invalid"
	default:
		return "error"
	}
}

// isInvalid reports whether err refuses the event itself (its outcome is
// invalid), rather than failing to store it.
func isInvalid(err error) bool {
	r, ok := outcome.Of(err)
	return ok && r.Kind == outcome.Invalid
}
