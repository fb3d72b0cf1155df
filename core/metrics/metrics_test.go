package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func scrape(t *testing.T, r *Registry) string {
	t.Helper()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestHandlerServesBuildInfoAndRuntimeMetrics(t *testing.T) {
	body := scrape(t, New("v1.2.3", "abc123"))
	want := `grasp_build_info{commit="abc123",goversion="` + runtime.Version() + `",version="v1.2.3"} 1`
	if !strings.Contains(body, want) {
		t.Fatalf("no %s in\n%s", want, body)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes"} {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("missing %s", name)
		}
	}
	if runtime.GOOS == "linux" && !strings.Contains(body, "\nprocess_resident_memory_bytes ") {
		t.Errorf("missing process collector")
	}
}

func TestPackagesRegisterThroughRegisterer(t *testing.T) {
	r := New("v1", "c1")
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "relay", Name: "events_received_total", Help: "test"})
	r.Registerer().MustRegister(c)
	c.Add(3)
	if body := scrape(t, r); !strings.Contains(body, "\ngrasp_relay_events_received_total 3\n") {
		t.Fatalf("registered counter not served:\n%s", body)
	}
	if err := r.Registerer().Register(prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "relay", Name: "events_received_total", Help: "test"})); err == nil {
		t.Fatal("duplicate registration accepted")
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New("a", "1"), New("b", "2")
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "only_in_a_total", Help: "test"})
	a.Registerer().MustRegister(c)
	if strings.Contains(scrape(t, b), "only_in_a_total") {
		t.Fatal("metric leaked into another registry")
	}
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "grasp_") {
			t.Fatalf("%s registered with the global registry", f.GetName())
		}
	}
}

func TestEmptyVersionFallsBack(t *testing.T) {
	v, c := BuildIdentity("", "")
	if v == "" || c == "" {
		t.Fatalf("empty identity %q %q", v, c)
	}
	if v, c := BuildIdentity("v9", "deadbeef"); v != "v9" || c != "deadbeef" {
		t.Fatalf("explicit identity overridden: %q %q", v, c)
	}
}
