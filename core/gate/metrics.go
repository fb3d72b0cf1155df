package gate

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	connections      prometheus.Gauge
	connectionsTotal prometheus.Counter
	messagesIn       prometheus.Counter
	messagesOut      prometheus.Counter
	negSessions      prometheus.Gauge
	negTotal         prometheus.Counter
	negErrors        prometheus.Counter
	slowReaders      prometheus.Counter
	limits           *prometheus.CounterVec
	panics           prometheus.Counter
}

// limitKinds are pre-created so every series exists at zero from the start.
var limitKinds = []string{
	"message_size", "subscriptions", "subid_length", "filters", "malformed",
	"binary", "unknown_verb", "neg_sessions", "neg_sessions_total", "neg_events", "client_timeout",
	"filter_items", "connections_total", "connections_ip", "neg_sessions_ip",
}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns, sub = "grasp", "gate"
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "connections", Help: "Client websocket connections open now."}),
		connectionsTotal: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "connections_total", Help: "Client websocket connections accepted."}),
		messagesIn: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "messages_in_total", Help: "Websocket messages received from clients."}),
		messagesOut: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "messages_out_total", Help: "Websocket messages written to clients."}),
		negSessions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "negentropy_sessions", Help: "NIP-77 sessions open now."}),
		negTotal: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "negentropy_sessions_total", Help: "NIP-77 sessions opened successfully."}),
		negErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "negentropy_errors_total", Help: "NEG-ERR replies sent."}),
		slowReaders: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "slow_reader_disconnects_total", Help: "Clients disconnected because their outbound queue exceeded the limit."}),
		limits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "limit_rejections_total", Help: "Client messages refused by a gate limit or check, by kind."}, []string{"kind"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "panics_total", Help: "Client messages whose handling panicked (logged with the stack, answered error:, the connection kept)."}),
	}
	for _, k := range limitKinds {
		m.limits.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.connections, m.connectionsTotal, m.messagesIn, m.messagesOut,
			m.negSessions, m.negTotal, m.negErrors, m.slowReaders, m.limits, m.panics)
	}
	return m
}

func (m *metrics) limit(kind string) { m.limits.WithLabelValues(kind).Inc() }
