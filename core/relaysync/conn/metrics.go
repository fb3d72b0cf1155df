package conn

import "github.com/prometheus/client_golang/prometheus"

// Event sources of the events counter: what brought an event in.
const (
	sourceLive    = "live"
	sourceCatchUp = "catchup"
)

// Gap classes: an event catch-up found although a live subscription that
// should have delivered it was open. "catchup" after a reconnect or a
// consolidation (a since filter), "daily" in a full resync: a gap that
// survived every earlier catch-up.
const (
	gapCatchUp = "catchup"
	gapDaily   = "daily"
)

// metrics are always collected; exported only with a Registerer. Per-relay
// connection state and attempts are the manager's (grasp_sync_relay_connected,
// grasp_sync_connection_attempts_total); these add what only the connection
// layer sees. No relay label here: the number of peers is unbounded.
type metrics struct {
	events    *prometheus.CounterVec // source, result
	pulled    *prometheus.CounterVec // from, result
	gaps      *prometheus.CounterVec // kind
	dropped   *prometheus.CounterVec // reason
	paced     prometheus.Counter
	dials     *prometheus.CounterVec // result
	open      prometheus.Gauge
	catchUps  prometheus.Gauge
	notices   prometheus.Counter
	liveDelay prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_events_total",
			Help: "Events from sync peers by source (live, catchup) and pipeline result (stored, held, duplicate, rejected, over_daily_bound).",
		}, []string{"source", "result"}),
		pulled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_pulled_events_total",
			Help: "Events from sync peers by why the relay is synced (from: bootstrap, repo: an announcement lists it, outbox: only a participant's NIP-65 write relay, GRASP-03) and result (stored, held, duplicate, rejected, over_daily_bound: dropped, the relay reached sync.outbox_events_per_relay_per_day).",
		}, []string{"from", "result"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_gap_events_total",
			Help: "Events catch-up stored although a live subscription should have brought them: kind catchup (after a reconnect) or daily (full resync).",
		}, []string{"kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_inbound_dropped_total",
			Help: "Frames from sync peers dropped before the pipeline: malformed, unknown_sub, unmatched (event outside the subscription's filter), oversized, overflow (the peer outpaced ingestion and was disconnected).",
		}, []string{"reason"}),
		paced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_sync_inbound_paced_total",
			Help: "Events delayed by the per-relay inbound rate cap.",
		}),
		dials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_sync_dials_total", Help: "Websocket dials to sync peers by result (ok, failed).",
		}, []string{"result"}),
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_websockets_open", Help: "Live-subscription websockets open to sync peers.",
		}),
		catchUps: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_sync_catchups_running", Help: "Catch-up sessions running now.",
		}),
		notices: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_sync_notices_total", Help: "NOTICE messages received from sync peers.",
		}),
		liveDelay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "grasp_sync_live_ingest_seconds",
			Help:    "Time from a live event's arrival on the socket to the pipeline's answer, including rate-cap waits.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9),
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.events, m.pulled, m.gaps, m.dropped, m.paced, m.dials, m.open, m.catchUps, m.notices, m.liveDelay} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
