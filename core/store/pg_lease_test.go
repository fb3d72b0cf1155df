package store

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// candidate runs s.Lead until the test ends and reports whether it leads
// and how many terms it ran.
type candidate struct {
	leading atomic.Bool
	terms   atomic.Int32
	stop    context.CancelFunc
	done    chan struct{}
}

func campaign(t *testing.T, s *Store, lease time.Duration) *candidate {
	t.Helper()
	c := &candidate{done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	go func() {
		defer close(c.done)
		err := s.Lead(ctx, LeadOptions{Lease: lease, OnChange: c.leading.Store}, func(ctx context.Context) {
			c.terms.Add(1)
			<-ctx.Done()
		})
		if err != nil {
			t.Errorf("lead: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// One of two instances leads; when the leader's database session dies, it
// stops its singletons and the other takes over within the lease, on the
// store's clock (issue 17 part 4).
func TestPostgresLeaderFailover(t *testing.T) {
	const lease = 9 * time.Second
	url := pgtest.DB(t)
	ca, cb := clock.NewFake(epoch), clock.NewFake(epoch)
	a := openTestEnv(t, Options{Backend: BackendPostgres, PostgresURL: url}, env.Env{Clock: ca})
	b := openTestEnv(t, Options{Backend: BackendPostgres, PostgresURL: url}, env.Env{Clock: cb})
	la := campaign(t, a, lease)
	testwait.For(t, "A to lead", la.leading.Load)
	lb := campaign(t, b, lease)
	// B asks again every lease/3 and is refused while A's session lives.
	for range 3 {
		testwait.For(t, "B to wait for its next try", func() bool { return cb.Pending() > 0 })
		cb.Advance(lease / 3)
	}
	if lb.leading.Load() || lb.terms.Load() != 0 {
		t.Fatal("B leads while A holds the lease")
	}
	if res, err := b.pg().pgDB().Exec(`SELECT pg_terminate_backend(l.pid) FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.objid::bigint = $1`, pgLockLeader&0xffffffff); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("terminated %d sessions holding the lease, want A's one", n)
	}
	// One renewal of A's: after stepping down A waits lease/3 before it
	// asks again, and its clock stays still meanwhile.
	ca.Advance(lease / 3)
	testwait.For(t, "A to notice its lease is gone and stop leading", func() bool { return !la.leading.Load() })
	testwait.Stepping(t, "B to take over", func() { cb.Advance(lease / 3) }, lb.leading.Load)
	if lb.terms.Load() != 1 {
		t.Fatalf("B ran %d terms, want 1", lb.terms.Load())
	}
	// A, alive again, does not take the lease back while B holds it.
	for range 3 {
		testwait.For(t, "A to wait for its next try", func() bool { return ca.Pending() > 0 })
		ca.Advance(lease / 3)
	}
	if la.terms.Load() != 1 {
		t.Fatalf("A led %d terms, want only its first", la.terms.Load())
	}
	// B stepping down (its instance stops) hands the lease back to A.
	lb.stop()
	<-lb.done
	testwait.Stepping(t, "A to take the lease back", func() { ca.Advance(lease / 3) }, la.leading.Load)
}

// With badger the single process leads at once.
func TestBadgerLeadsAtOnce(t *testing.T) {
	s := openTest(t, Options{})
	c := campaign(t, s, time.Second)
	testwait.For(t, "the badger store to lead", func() bool { return c.leading.Load() && c.terms.Load() == 1 })
}
