package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestGroupCommitAppliesDuringASyncAndAnswersAfterIt holds the first
// batch's sync open while 15 more saves arrive: the writer applies the next
// batch meanwhile (its events readable, issue 27 part 5), no caller is
// answered before the sync of its own batch, syncs run one at a time, and
// the 16 saves take three syncs (the first save's, the batch applied
// during it, the rest queued behind).
func TestGroupCommitAppliesDuringASyncAndAnswersAfterIt(t *testing.T) {
	s := openTest(t, Options{})
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	var inSync atomic.Int32
	s.badger().w.syncFn = func(vlog bool) error {
		if inSync.Add(1) != 1 {
			t.Errorf("two syncs at once")
		}
		defer inSync.Add(-1)
		entered <- struct{}{}
		<-release
		return s.badger().syncDurable(vlog)
	}
	ctx := context.Background()
	evts := make([]*nostr.Event, 16)
	for i := range evts {
		evts[i] = signed(t, testKey(i), 1, nostr.Timestamp(1000+i), "batched")
	}
	readable := func(e *nostr.Event) bool {
		ch, err := s.Events().QueryEvents(ctx, nostr.Filter{IDs: []string{e.ID}})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for range ch {
			found = true
		}
		return found
	}
	applied := func() (n int) {
		for _, e := range evts[1:] {
			if readable(e) {
				n++
			}
		}
		return n
	}
	var answered sync.Map // index → true once its save returned
	results := make(chan error, 16)
	save := func(i int) {
		err := s.Events().SaveEvent(ctx, evts[i])
		answered.Store(i, true)
		results <- err
	}
	count := func() (n int) {
		answered.Range(func(any, any) bool { n++; return true })
		return n
	}

	go save(0)
	<-entered // batch 1 (one save) is syncing
	for i := 1; i < 16; i++ {
		go save(i)
	}
	// The writer applies a second batch during the first sync, then waits
	// for that sync; what it did not take stays queued.
	testwait.For(t, "15 saves applied or queued", func() bool { return applied()+len(s.badger().w.queue) == 15 })
	batch2 := applied()
	if batch2 == 0 {
		t.Fatalf("no save applied while the first batch synced")
	}
	if n := count(); n != 0 {
		t.Fatalf("%d saves returned before the first sync finished", n)
	}

	release <- struct{}{} // finish batch 1
	if err := <-results; err != nil {
		t.Fatalf("first save: %v", err)
	}
	<-entered // batch 2 is syncing; batch 3 (everything left) is applied meanwhile
	testwait.For(t, "all 15 saves applied", func() bool { return applied() == 15 })
	if n := count(); n != 1 {
		t.Fatalf("%d saves returned, want only the first batch's one before the second sync finished", n)
	}
	release <- struct{}{}
	for range batch2 {
		if err := <-results; err != nil {
			t.Fatalf("batched save: %v", err)
		}
	}
	if 15-batch2 > 0 {
		<-entered // batch 3
		if n := count(); n != 1+batch2 {
			t.Fatalf("%d saves returned, want %d before the third sync finished", n, 1+batch2)
		}
		release <- struct{}{}
		for range 15 - batch2 {
			if err := <-results; err != nil {
				t.Fatalf("batched save: %v", err)
			}
		}
	}
	select {
	case <-entered:
		t.Fatalf("a fourth sync ran for 16 saves")
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
