package hunt

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	queue      prometheus.Gauge
	attempts   *prometheus.CounterVec // by result kind
	rounds     *prometheus.CounterVec // complete, backoff
	oids       prometheus.Counter
	inFlight   *prometheus.GaugeVec
	requests   *prometheus.CounterVec
	throttled  *prometheus.CounterVec
	naughty    prometheus.Gauge
	enabled    prometheus.Gauge
	collectors []prometheus.Collector
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_hunt_queue_repos", Help: "Repositories queued for git-data hunting.",
		}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_hunt_fetch_attempts_total", Help: "Git fetches by result: ok, partial, missing, network, protocol, timeout, local, other.",
		}, []string{"result"}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_hunt_rounds_total", Help: "Hunt rounds by outcome: complete (every OID present) or backoff.",
		}, []string{"outcome"}),
		oids: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "grasp_hunt_oids_fetched_total", Help: "Needed objects that arrived by fetch.",
		}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "grasp_hunt_domain_in_flight", Help: "Git fetches in flight per domain named in a throttle tuning file; domain=\"other\" sums the rest.",
		}, []string{"domain"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_hunt_domain_requests_total", Help: "Git fetches started per domain named in a throttle tuning file; domain=\"other\" sums the rest.",
		}, []string{"domain"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "grasp_hunt_throttled_waits_total", Help: "Times a repository had to wait for a domain's throttle, per domain named in a throttle tuning file; domain=\"other\" sums the rest.",
		}, []string{"domain"}),
		naughty: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_hunt_naughty_hosts", Help: "Hosts skipped after DNS, TLS or connection failures.",
		}),
		enabled: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "grasp_hunt_enabled", Help: "1 if the git-data hunter fetches, 0 if it refused to start (the log says why: a git older than 2.37 cannot pin fetches).",
		}),
	}
	m.collectors = []prometheus.Collector{m.queue, m.attempts, m.rounds, m.oids, m.inFlight, m.requests, m.throttled, m.naughty, m.enabled}
	if reg != nil {
		for _, c := range m.collectors {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register hunt metrics: %w", err)
			}
		}
	}
	return m, nil
}

// otherDomains is the domain label of every domain the operator does not
// name: domains come from clone URLs in strangers' announcements, and one
// announcement could otherwise create a series per domain it lists (F14).
const otherDomains = "other"

// forgetDomain drops a named domain's series when its throttle state is
// dropped (it is idle); the shared "other" series stay.
func (m *metrics) forgetDomain(d *domainState) {
	if d.label == otherDomains {
		return
	}
	m.inFlight.DeleteLabelValues(d.label)
	m.requests.DeleteLabelValues(d.label)
	m.throttled.DeleteLabelValues(d.label)
}
