package health

import (
	"context"
	"fmt"
	"strings"

	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// blockingKV holds every Put until released, like a disk that takes its
// time to fsync.
type blockingKV struct {
	memKV
	release chan struct{}
	puts    atomic.Int64
}

func (b *blockingKV) Put(ctx context.Context, bucket, key string, val []byte, ttl time.Duration) error {
	<-b.release
	b.puts.Add(1)
	return b.memKV.Put(ctx, bucket, key, val, ttl)
}

// Audit F14: one announcement listing 1000 relays added 1000 health
// records, each failure fsynced under the tracker's global lock, and ~4000
// metric series labelled with the announcer's URLs that were never deleted.
// Records are now bounded (the longest idle forgotten first, the operator's
// relays never), failures do not wait for the disk, and only the operator's
// relays are labelled.
func TestAbuse_F14_HealthRecordsBoundedUnlabelledAndNotSyncedUnderTheLock(t *testing.T) {
	const boot = "wss://boot.example"
	kv := &blockingKV{release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	tr, err := New(Options{KV: kv, Config: config.Health{MaxRecords: 50}, Labelled: []string{boot}}, env.Env{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	tr.Failed(boot, epoch)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 1000; i++ {
			tr.Failed(fmt.Sprintf("wss://attacker-%d.example/p", i), epoch.Add(time.Duration(i+1)*time.Millisecond))
		}
	}()
	select {
	case <-done:
	case <-testwait.After(t):
		close(kv.release)
		t.Fatal("1000 failures did not return while the disk was busy: they wait for each write")
	}
	if n := tr.Len(); n != 50 {
		t.Fatalf("%d records, want max_records 50", n)
	}
	if _, ok := tr.State(boot); !ok {
		t.Fatal("the bootstrap relay's record was evicted")
	}
	if _, ok := tr.State("wss://attacker-999.example/p"); !ok {
		t.Fatal("the newest record was evicted instead of the longest idle")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "attacker") {
					t.Fatalf("%s carries the stranger's URL %q", mf.GetName(), l.GetValue())
				}
			}
		}
	}
	if series > 10 {
		t.Fatalf("%d health series for one bootstrap relay", series)
	}
	if got := gaugeValue(t, tr.classes.WithLabelValues("backoff")); got != 50 {
		t.Fatalf("grasp_health_relays{status=backoff} = %v, want 50", got)
	}
	close(kv.release)
	tr.Close()
	// what is on disk is what is in memory, evicted records deleted, and
	// the writes were coalesced (one per relay at most, not one per failure)
	kv.mu.Lock()
	stored := len(kv.data["relay-health"])
	kv.mu.Unlock()
	if stored != 50 {
		t.Fatalf("%d records persisted, want 50", stored)
	}
	if p := kv.puts.Load(); p > 1001 {
		t.Fatalf("%d writes for 1001 failures", p)
	}
}

// Records of relays nothing happened with for forget_after are dropped, in
// memory and on disk.
func TestF14_IdleHealthRecordsAreForgotten(t *testing.T) {
	kv := &memKV{}
	tr, err := New(Options{KV: kv, Config: config.Health{ForgetAfter: config.Duration(time.Hour)}}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	tr.Failed("wss://gone.example", epoch)
	tr.Failed("wss://here.example", epoch.Add(50*time.Minute))
	tr.Failed("wss://here.example", epoch.Add(90*time.Minute))
	tr.Close()
	if _, ok := tr.State("wss://gone.example"); ok {
		t.Fatal("a record idle for longer than forget_after was kept")
	}
	if _, ok := tr.State("wss://here.example"); !ok {
		t.Fatal("an active record was dropped")
	}
	kv.mu.Lock()
	_, onDisk := kv.data["relay-health"]["wss://gone.example"]
	kv.mu.Unlock()
	if onDisk {
		t.Fatal("the forgotten record is still on disk")
	}
}
