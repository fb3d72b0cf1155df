package plugins

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
)

// metrics are registered once per Host and shared by its generations.
type metrics struct {
	calls   *prometheus.HistogramVec
	errors  *prometheus.CounterVec
	reloads *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "grasp_plugin_call_seconds",
			Help:    "Time spent in one plugin hook call.",
			Buckets: []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5},
		}, []string{"plugin", "hook"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_plugin_errors_total",
			Help: "Failed plugin calls by kind (timeout, exception, panic, bad-return, busy, canceled).",
		}, []string{"plugin", "hook", "kind"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_plugin_reloads_total",
			Help: "Plugin set reloads by result.",
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.calls, m.errors, m.reloads} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observer is one plugin's pre-resolved metric handles (nil-safe).
type observer struct {
	m      *metrics
	hist   prometheus.Observer
	plugin string
	hook   string
}

func (m *metrics) observer(plugin string, kind Kind) observer {
	if m == nil {
		return observer{}
	}
	return observer{m: m, hist: m.calls.WithLabelValues(plugin, kind.export()), plugin: plugin, hook: kind.export()}
}

func (o observer) took(d time.Duration) {
	if o.hist != nil {
		o.hist.Observe(d.Seconds())
	}
}

func (o observer) failed(kind string) {
	if o.m != nil {
		o.m.errors.WithLabelValues(o.plugin, o.hook, kind).Inc()
	}
}

func (m *metrics) reloaded(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.reloads.WithLabelValues("ok").Inc()
	} else {
		m.reloads.WithLabelValues("error").Inc()
	}
}

// errLog rate-limits a plugin's error lines: a script that throws on every
// event must not flood the log. Suppressed lines are counted in the next one.
type errLog struct {
	clk        clock.Clock
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

const errLogEvery = 10 * time.Second

func newErrLog(clk clock.Clock) *errLog { return &errLog{clk: clk} }

func (e *errLog) log(l hclog.Logger, msg string, args ...any) {
	now := e.clk.Now()
	e.mu.Lock()
	if !e.last.IsZero() && now.Sub(e.last) < errLogEvery {
		e.suppressed++
		e.mu.Unlock()
		return
	}
	n := e.suppressed
	e.last, e.suppressed = now, 0
	e.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	l.Error(msg, args...)
}
