package env

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/clock"
)

func TestOrDefaultsFillsOnlyWhatIsUnset(t *testing.T) {
	fake := clock.NewFake(time.Unix(1000, 0))
	reg := prometheus.NewRegistry()
	e := Env{Clock: fake, Metrics: reg}.OrDefaults()
	if e.Clock != fake || e.Metrics != reg {
		t.Fatal("OrDefaults replaced a value that was set")
	}
	if e.Log == nil {
		t.Fatal("OrDefaults left the logger nil")
	}
	z := Env{}.OrDefaults()
	if z.Clock == nil || z.Log == nil || z.Metrics == nil {
		t.Fatalf("zero Env not filled: %+v", z)
	}
	// two zero Envs never share a registry: parts built alone in tests
	// must not collide on metric names
	if z.Metrics == (Env{}.OrDefaults()).Metrics {
		t.Fatal("two defaulted Envs share one registry")
	}
}

func TestNamedNamesTheLogger(t *testing.T) {
	e := Env{}.Named("relay").Named("gate")
	if got := e.Log.Name(); got != "relay.gate" {
		t.Fatalf("logger name = %q, want relay.gate", got)
	}
}
