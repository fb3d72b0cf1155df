package health

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

type memKV struct {
	mu   sync.Mutex
	data map[string]map[string][]byte
	fail error
}

func (m *memKV) Put(_ context.Context, bucket, key string, val []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if ttl <= 0 {
		return errors.New("no ttl")
	}
	if m.data == nil {
		m.data = map[string]map[string][]byte{}
	}
	if m.data[bucket] == nil {
		m.data[bucket] = map[string][]byte{}
	}
	m.data[bucket][key] = append([]byte(nil), val...)
	return nil
}

func (m *memKV) Delete(_ context.Context, bucket, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data[bucket], key)
	return nil
}

func (m *memKV) Scan(_ context.Context, bucket string, fn func(string, []byte, time.Time) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.data[bucket] {
		if err := fn(k, v, time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

func TestG02_8_TrackerSurvivesRestart(t *testing.T) {
	kv := &memKV{}
	tr, err := New(Options{KV: kv}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	const u = "wss://down.example"
	for i := 0; i < 3; i++ {
		tr.Failed(u, epoch.Add(time.Duration(i)*time.Second))
	}
	tr.RateLimited("wss://busy.example", epoch)
	tr.Succeeded("wss://up.example", epoch, 42*time.Millisecond)
	tr.Close()

	again, err := New(Options{KV: kv}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	st, ok := again.State(u)
	if !ok || st.Failures != 3 || !st.FirstFailure.Equal(epoch) {
		t.Fatalf("reloaded state %+v ok=%v", st, ok)
	}
	if got := again.NextAttempt(u, epoch.Add(2*time.Second)); !got.Equal(epoch.Add(22 * time.Second)) {
		t.Fatalf("reloaded next attempt %v, want last failure + 20s", got)
	}
	if got := again.NextAttempt("wss://busy.example", epoch); !got.Equal(epoch.Add(65 * time.Second)) {
		t.Fatalf("cooldown lost on restart: %v", got)
	}
	h := again.Health("wss://up.example")
	if !h.OK || h.LatencyMs != 42 || !h.LastOK.Equal(epoch) {
		t.Fatalf("selector health %+v", h)
	}
	if h := again.Health(u); h.OK || h.Failures != 3 {
		t.Fatalf("failing relay health %+v", h)
	}
}

func TestTrackerSkipsCorruptRecordAndReportsLoadError(t *testing.T) {
	kv := &memKV{data: map[string]map[string][]byte{"relay-health": {
		"wss://bad.example": []byte("{not json"),
		"wss://ok.example":  []byte(`{"failures":2}`),
	}}}
	tr, err := New(Options{KV: kv}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.State("wss://bad.example"); ok {
		t.Fatal("corrupt record loaded")
	}
	if st, _ := tr.State("wss://ok.example"); st.Failures != 2 {
		t.Fatalf("good record lost: %+v", st)
	}
	_, err = New(Options{KV: scanErrKV{}}, env.Env{})
	if err == nil || !strings.Contains(err.Error(), "load relay health") {
		t.Fatalf("scan error not reported: %v", err)
	}
}

type scanErrKV struct{}

func (scanErrKV) Put(context.Context, string, string, []byte, time.Duration) error { return nil }
func (scanErrKV) Delete(context.Context, string, string) error                     { return nil }
func (scanErrKV) Scan(context.Context, string, func(string, []byte, time.Time) error) error {
	return errors.New("disk gone")
}

func TestTrackerWriteFailureKeepsMemoryState(t *testing.T) {
	kv := &memKV{fail: errors.New("read-only")}
	tr, err := New(Options{KV: kv}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Failed("wss://x.example", epoch)
	tr.Close()
	if st, _ := tr.State("wss://x.example"); st.Failures != 1 {
		t.Fatalf("state not kept in memory: %+v", st)
	}
}

func TestTrackerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	tr, err := New(Options{Config: config.Health{DeadAfter: config.Duration(time.Minute)}, Labelled: []string{"wss://a.example", "wss://b.example"}},
		env.Env{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	tr.Failed("wss://a.example", epoch)
	tr.Failed("wss://a.example", epoch.Add(2*time.Minute))
	tr.Failed("wss://b.example", epoch)
	if got := gaugeValue(t, tr.dead); got != 1 {
		t.Fatalf("relays dead = %v, want 1", got)
	}
	if got := gaugeValue(t, tr.status.WithLabelValues("wss://b.example")); got != float64(Backoff) {
		t.Fatalf("status of b = %v, want backoff", got)
	}
	if got := gaugeValue(t, tr.failures.WithLabelValues("wss://a.example")); got != 2 {
		t.Fatalf("failures of a = %v", got)
	}
	if tr.Status("wss://a.example") != Dead {
		t.Fatalf("a not dead")
	}
}

func TestTrackerConcurrentUse(t *testing.T) {
	tr, err := New(Options{KV: &memKV{}}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				tr.Failed("wss://r.example", epoch)
				_ = tr.Health("wss://r.example")
				_ = tr.NextAttempt("wss://r.example", epoch)
			}
		}()
	}
	wg.Wait()
	if st, _ := tr.State("wss://r.example"); st.Failures != 800 {
		t.Fatalf("failures = %d, want 800", st.Failures)
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
