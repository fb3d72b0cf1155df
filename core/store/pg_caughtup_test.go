package store

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/lib/pq"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/pgtest"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// CaughtUp on B returns only once B's Follow has handled every change A
// committed before the call: here B's handling of A's side-table change
// is held until the test lets it go, and CaughtUp, called after A's
// commit, must not return before (issue 17: what A answered OK true to is
// known to B's next decision).
func TestPostgresCaughtUpWaitsForWhatOthersCommittedBefore(t *testing.T) {
	url := pgtest.DB(t)
	a := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	b := openTest(t, Options{Backend: BackendPostgres, PostgresURL: url})
	if err := b.CaughtUp(context.Background()); err != nil {
		t.Fatalf("CaughtUp with no Follow running: %v, want nil at once", err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	var handled atomic.Bool
	seen := make(chan string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.Follow(ctx, Follower{Stored: func(evt *nostr.Event) {}, SideChanged: func(bucket, key string) {
			if key == "held" {
				close(entered)
				<-release
				handled.Store(true)
				return
			}
			select {
			case seen <- key:
			default:
			}
		}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("follow: %v", err)
		}
	})
	// Follow listens asynchronously: probe until B hears A
	probes := 0
	testwait.Stepping(t, "B's Follow to hear A's side-table changes", func() {
		probes++
		if err := a.Side().Put(context.Background(), "purgatory", "probe", []byte{byte(probes)}, 0); err != nil {
			t.Fatal(err)
		}
	}, func() bool {
		select {
		case <-seen:
			return true
		default:
			return false
		}
	})

	if err := a.Side().Put(context.Background(), "purgatory", "held", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	caught := make(chan bool, 1)
	go func() {
		if err := b.CaughtUp(context.Background()); err != nil {
			t.Errorf("CaughtUp: %v", err)
		}
		caught <- handled.Load()
	}()
	<-entered
	close(release)
	if !<-caught {
		t.Fatal("CaughtUp returned before B handled the change A committed before the call")
	}
}

// A reconnect signal (nil) queued behind other notifications ends take's
// batch and is reported, so the feed catches up and reloads: take used to
// drop it, and what was lost with the connection stayed lost.
func TestPostgresFeedTakeReportsReconnectInBatch(t *testing.T) {
	fd := &feed{s: &pgStore{own: newIDRing(16), marks: newPGMarks()}, f: Follower{}}
	more := make(chan *pq.Notification, 4)
	more <- &pq.Notification{Channel: pgChanEvents, Extra: "second"}
	more <- nil
	more <- &pq.Notification{Channel: pgChanEvents, Extra: "after"}
	ids, _, reconnected := fd.take(&pq.Notification{Channel: pgChanEvents, Extra: "first"}, more)
	if !reconnected {
		t.Fatal("take dropped the reconnect signal queued in its batch")
	}
	if len(ids) != 2 || ids[0] != "first" || ids[1] != "second" {
		t.Fatalf("take returned %v, want the ids before the reconnect", ids)
	}
}
