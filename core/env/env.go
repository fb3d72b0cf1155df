// Package env owns the one constructor convention of grasp: every long-lived
// part is built as New(opts, env), where opts is the part's own settings and
// env carries what every part shares — the clock, a logger named after the
// part, and the metrics registerer it reports into.
//
// It exists so that tests swap the clock once for the whole server, so that
// the composition root builds the registry before anything that reports into
// it (plugins included), and so that no constructor grows a positional
// clock/logger/registry tail of its own. It holds no state and never builds a
// root logger or a process-wide registry.
package env

import (
	"io"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
)

// Env is what every part is built with besides its own options.
type Env struct {
	Clock   clock.Clock
	Log     hclog.Logger
	Metrics prometheus.Registerer
}

// Named returns e with its logger named for a sub-part ("relay", "hunt").
func (e Env) Named(name string) Env {
	e = e.OrDefaults()
	e.Log = e.Log.Named(name)
	return e
}

// OrDefaults fills what is unset: the wall clock, a logger that discards, and
// a private registry (so a part built alone in a test never registers twice
// with a shared one).
func (e Env) OrDefaults() Env {
	if e.Clock == nil {
		e.Clock = clock.New()
	}
	if e.Log == nil {
		// not hclog.NewNullLogger: it drops names, and tests read them
		e.Log = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
	}
	if e.Metrics == nil {
		e.Metrics = prometheus.NewRegistry()
	}
	return e
}
