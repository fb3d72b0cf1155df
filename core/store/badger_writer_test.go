package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestGroupCommitSharesOneSyncAndAnswersAfterIt holds the first batch's sync
// open while 15 more saves queue up, then checks they commit as one batch
// with one sync, and that no caller is answered before its batch's sync.
func TestGroupCommitSharesOneSyncAndAnswersAfterIt(t *testing.T) {
	s := openTest(t, Options{})
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	s.badger().w.syncFn = func(vlog bool) error {
		entered <- struct{}{}
		<-release
		return s.badger().syncDurable(vlog)
	}
	results := make(chan error, 16)
	save := func(i int) {
		e := signed(t, testKey(i), 1, nostr.Timestamp(1000+i), "batched")
		results <- s.Events().SaveEvent(context.Background(), e)
	}

	go save(0)
	<-entered // batch 1 (one save) is syncing
	for i := 1; i < 16; i++ {
		go save(i)
	}
	testwait.For(t, "15 queued saves", func() bool { return len(s.badger().w.queue) == 15 })
	if len(results) != 0 {
		t.Fatalf("a save returned before its sync finished")
	}

	release <- struct{}{} // finish batch 1
	if err := <-results; err != nil {
		t.Fatalf("first save: %v", err)
	}
	<-entered // batch 2 is syncing: it must hold all 15 queued saves
	if n := len(s.badger().w.queue); n != 0 {
		t.Fatalf("%d saves left out of the second batch", n)
	}
	if len(results) != 0 {
		t.Fatalf("a save of batch 2 returned before its sync finished")
	}
	release <- struct{}{}
	for range 15 {
		if err := <-results; err != nil {
			t.Fatalf("batched save: %v", err)
		}
	}
	select {
	case <-entered:
		t.Fatalf("a third sync ran for 16 saves")
	default:
	}
	close(release) // let Close's final sync through
}

func TestFailedSyncFailsTheWholeBatch(t *testing.T) {
	s := openTest(t, Options{})
	boom := errors.New("disk on fire")
	var fail = true
	s.badger().w.syncFn = func(vlog bool) error {
		if fail {
			fail = false
			return boom
		}
		return s.badger().syncDurable(vlog)
	}
	err := s.Events().SaveEvent(context.Background(), signed(t, testKey(0), 1, 1000, "x"))
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "error: ") {
		t.Fatalf("got %v, want an \"error: \" wrapping the sync failure", err)
	}
	if err := s.Side().Put(context.Background(), "b", "k", []byte("v"), 0); err != nil {
		t.Fatalf("the next batch must work again: %v", err)
	}
}

func TestSaveGivesUpWhenContextEnds(t *testing.T) {
	s := openTest(t, Options{})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s.badger().w.syncFn = func(vlog bool) error {
		entered <- struct{}{}
		<-release
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Events().SaveEvent(ctx, signed(t, testKey(0), 1, 1000, "x")) }()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "error: ") {
		t.Fatalf("got %v, want an \"error: \" wrapping context.Canceled", err)
	}
	s.badger().w.syncFn = func(vlog bool) error { return nil }
	close(release)
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			return metricValue(m)
		}
	}
	return 0
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func TestMetricsCountWritesQueriesAndBatches(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Options{Dir: t.TempDir()}, env.Env{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	e := signed(t, testKey(0), 1, 1000, "m")
	mustSave(t, s.Events(), e)
	_ = s.Events().SaveEvent(ctx, e)
	_ = s.Events().SaveEvent(ctx, &nostr.Event{ID: "bad"})
	query(t, ctx, s.Events(), nostr.Filter{})
	if _, err := s.Events().CountEvents(ctx, nostr.Filter{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"grasp_store_writes_total", map[string]string{"op": "save", "result": "ok"}, 1},
		{"grasp_store_writes_total", map[string]string{"op": "save", "result": "duplicate"}, 1},
		{"grasp_store_writes_total", map[string]string{"op": "save", "result": "invalid"}, 1},
		{"grasp_store_queries_total", map[string]string{"kind": "req"}, 1},
		{"grasp_store_queries_total", map[string]string{"kind": "count"}, 1},
		{"grasp_store_write_seconds", map[string]string{"op": "save"}, 2}, // invalid input never queues
		{"grasp_store_batch_ops", nil, 2},
		{"grasp_store_sync_seconds", nil, 2},
	} {
		if got := counterValue(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A second store on the same registry is a wiring mistake, reported.
	if s2, err := New(Options{Dir: t.TempDir()}, env.Env{Metrics: reg}); err == nil {
		s2.Close()
		t.Fatalf("second registration on one registry succeeded")
	}
}
