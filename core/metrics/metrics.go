// Package metrics owns the process's Prometheus registry: build info, the Go
// runtime and process collectors, and the /metrics handler. Every other
// package registers its own collectors through Registerer() (taken as a
// prometheus.Registerer in its constructor) and names them grasp_<pkg>_...;
// nothing registers with the global default registry, so tests can build as
// many servers as they like in one process. The handler is meant for the
// separate loopback metrics listener, never the public port.
package metrics

import (
	"net/http"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric grasp defines: use it as the Namespace of
// prometheus.Opts.
const Namespace = "grasp"

// Registry is the process's metric registry.
type Registry struct {
	reg *prometheus.Registry
}

// New returns a registry holding grasp_build_info{version,commit,goversion}
// plus the Go runtime and process collectors. An empty version or commit is
// filled in by BuildIdentity.
func New(version, commit string) *Registry {
	version, commit = BuildIdentity(version, commit)
	reg := prometheus.NewRegistry()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   Namespace,
		Name:        "build_info",
		Help:        "Build of the running grasp binary; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": runtime.Version()},
	})
	info.Set(1)
	reg.MustRegister(
		info,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return &Registry{reg: reg}
}

// Registerer is where packages register their collectors.
func (r *Registry) Registerer() prometheus.Registerer { return r.reg }

// Gatherer exposes the collected metrics, for tests and the bench command.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves the metrics in the Prometheus exposition format. A collector
// that fails is reported in the response and does not hide the others.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          r.reg, // promhttp's own scrape counters
		EnableOpenMetrics: true,
	})
}
