package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// collector records what Follow delivers.
type collector struct {
	mu   sync.Mutex
	ids  []string
	side []string
	n    map[string]int
}

func (c *collector) stored(e *nostr.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.ids = append(c.ids, e.ID)
	c.n[e.ID]++
}

func (c *collector) sideChanged(bucket, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.side = append(c.side, bucket+"/"+key)
}

func (c *collector) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

func (c *collector) sawSide(entry string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.side, entry)
}

// follow runs s.Follow into a collector until the test ends.
func follow(t *testing.T, s *Store) *collector {
	t.Helper()
	c := &collector{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Follow(ctx, Follower{Stored: c.stored, SideChanged: c.sideChanged}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("follow: %v", err)
		}
	})
	// Follow listens before it returns anything: wait until a probe
	// written by another store arrives, so later writes are not missed.
	return c
}

// Instance B receives live what instance A stores, by id, once, and not
// what B stored itself; side-table changes are announced too (issue 17
// part 2).
func TestPostgresFollowDeliversOtherInstancesEvents(t *testing.T) {
	url := pgtest.DB(t)
	a := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	b := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	got := follow(t, b)
	probe := func(i int) *nostr.Event {
		return signed(t, testKey(1), 1, nostr.Timestamp(1000+i), fmt.Sprint("probe ", i))
	}
	// Until Follow has subscribed, writes may pass unseen; keep writing
	// probes until one arrives.
	i := 0
	testwait.Stepping(t, "B's feed to deliver a probe from A", func() {
		i++
		mustSave(t, a.Events(), probe(i))
	}, func() bool { return got.count(probe(i).ID) == 1 })

	mine := signed(t, testKey(2), 1, 2000, "stored through B")
	mustSave(t, b.Events(), mine)
	evts := make([]*nostr.Event, 20)
	for j := range evts {
		evts[j] = signed(t, testKey(3), 1, nostr.Timestamp(3000+j), fmt.Sprint("from A ", j))
		mustSave(t, a.Events(), evts[j])
	}
	last := evts[len(evts)-1]
	testwait.For(t, "B to receive A's events", func() bool { return got.count(last.ID) == 1 })
	for _, e := range evts {
		if n := got.count(e.ID); n != 1 {
			t.Fatalf("event %s delivered %d times, want once", e.ID, n)
		}
	}
	if n := got.count(mine.ID); n != 0 {
		t.Fatalf("B's own event delivered back to it %d times", n)
	}
	if err := a.Side().Put(context.Background(), "purgatory", "held-id", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "B to hear of A's side-table change", func() bool { return got.sawSide("purgatory/held-id") })
}

// When B's LISTEN connection is killed, B reconnects and catches up what A
// stored meanwhile, each event once (issue 17 part 2: bounded behaviour
// when the connection drops).
func TestPostgresFollowCatchesUpAfterLostConnection(t *testing.T) {
	url := pgtest.DB(t)
	a := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	b := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	got := follow(t, b)
	i := 0
	probe := func(i int) *nostr.Event {
		return signed(t, testKey(1), 1, nostr.Timestamp(1000+i), fmt.Sprint("probe ", i))
	}
	testwait.Stepping(t, "B's feed to deliver a probe from A", func() {
		i++
		mustSave(t, a.Events(), probe(i))
	}, func() bool { return got.count(probe(i).ID) == 1 })

	// Kill B's listening session from the server side.
	res, err := a.pg().pgDB().Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("terminated %d LISTEN sessions, want B's one", n)
	}
	evts := make([]*nostr.Event, 30)
	for j := range evts {
		evts[j] = signed(t, testKey(3), 1, nostr.Timestamp(3000+j), fmt.Sprint("while B was away ", j))
		mustSave(t, a.Events(), evts[j])
	}
	testwait.For(t, "B to catch up every event stored while it was away", func() bool {
		for _, e := range evts {
			if got.count(e.ID) == 0 {
				return false
			}
		}
		return true
	})
	marker := signed(t, testKey(4), 1, 9000, "after the reconnect")
	mustSave(t, a.Events(), marker)
	testwait.For(t, "B to receive live again", func() bool { return got.count(marker.ID) == 1 })
	for _, e := range append(evts, probe(i)) {
		if n := got.count(e.ID); n != 1 {
			t.Fatalf("event %s delivered %d times, want once", e.ID, n)
		}
	}
}

// A side-table change written by another instance after this one loaded its
// state but before its LISTEN ran would be heard by nobody: Follow reloads
// once (Resync) as soon as it listens, so the change is still honoured (the
// multi-instance ban of TestNIP86_BanThroughAClosesSubscriptionOnB).
func TestPostgresFollowResyncsOnceItListens(t *testing.T) {
	url := pgtest.DB(t)
	a := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	b := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	// written after B opened, before B listens
	if err := a.Side().Put(context.Background(), "nip86", "banned:x", []byte("{}"), 0); err != nil {
		t.Fatal(err)
	}
	var resyncs atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Follow(ctx, Follower{Stored: func(*nostr.Event) {}, Resync: func() { resyncs.Add(1) }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("follow: %v", err)
		}
	}()
	testwait.For(t, "B to reload its state once it listens", func() bool { return resyncs.Load() == 1 })
}
