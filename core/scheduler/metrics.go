package scheduler

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// loopMetrics are labelled by loop name; the set of loops is fixed by the
// code, so the label's cardinality is small.
type loopMetrics struct {
	runs         *prometheus.CounterVec
	errors       *prometheus.CounterVec
	panics       *prometheus.CounterVec
	restarts     *prometheus.CounterVec
	lastDuration *prometheus.GaugeVec
	running      *prometheus.GaugeVec
}

func newLoopMetrics(reg prometheus.Registerer) *loopMetrics {
	labels := []string{"loop"}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "grasp", Subsystem: "scheduler", Name: name, Help: help,
		}, labels)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "grasp", Subsystem: "scheduler", Name: name, Help: help,
		}, labels)
	}
	m := &loopMetrics{
		runs:         counter("runs_total", "Completed runs of a loop function (Every: one per interval; Go: one per start)."),
		errors:       counter("errors_total", "Runs that returned an error or panicked."),
		panics:       counter("panics_total", "Runs that panicked (recovered)."),
		restarts:     counter("restarts_total", "Restarts of a Go loop after a panic or an error."),
		lastDuration: gauge("last_duration_seconds", "Duration of the loop's last completed run."),
		running:      gauge("running", "1 while the loop function is executing."),
	}
	if reg == nil {
		return m
	}
	m.runs = register(reg, m.runs)
	m.errors = register(reg, m.errors)
	m.panics = register(reg, m.panics)
	m.restarts = register(reg, m.restarts)
	m.lastDuration = register(reg, m.lastDuration)
	m.running = register(reg, m.running)
	return m
}

// register registers c, or returns the collector already registered under
// the same name, so two schedulers can share one registry (e.g. a reload).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// Only a conflicting definition under our own metric name can get
		// here, which is a bug in this package.
		panic("scheduler: register metrics: " + err.Error())
	}
	return c
}
