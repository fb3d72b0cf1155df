package relay

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// TestGracefulShutdownFinishesInFlightWrites: once the context ends, Serve
// stops accepting connections but does not return while a store write is in
// flight; the write completes and is durable when Serve returns.
func TestGracefulShutdownFinishesInFlightWrites(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	pipe := &fakePipeline{decide: func(evt *nostr.Event) policy.Decision {
		if evt.Content == "slow" {
			close(entered)
			<-release
		}
		return policy.Decision{Outcome: policy.Store}
	}}
	store := openBadger(t, t.TempDir(), true)
	defer store.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv, err := New(Options{PublicURL: "http://" + addr, Events: store, Pipeline: pipe}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	c := connect(t, "ws://"+addr)
	a := newKey(t)
	slow := a.event(t, 1, time.Now().Unix(), nil, "slow")
	frame, _ := json.Marshal([]any{"EVENT", slow})
	c.send(string(frame))
	<-entered
	if n := srv.writes.inflight(); n != 1 {
		t.Fatalf("in-flight writes = %d, want 1", n)
	}

	cancel()
	// The listener closes promptly; dial until refused (bounded in count).
	eventually(t, "listener closes", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return true
		}
		conn.Close()
		return false
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) while a write was in flight", err)
	default:
	}
	// New writes are refused while draining.
	if err := srv.write(context.Background(), a.event(t, 1, time.Now().Unix(), nil, "late"), false); err == nil || err.Error() != msgClosing {
		t.Fatalf("a write during shutdown must be refused, got %v", err)
	}

	close(release)
	if err := <-served; err != nil {
		t.Fatalf("Serve after a clean drain: %v", err)
	}
	if n := srv.writes.inflight(); n != 0 {
		t.Fatalf("in-flight writes after shutdown = %d", n)
	}
	ch, err := store.QueryEvents(context.Background(), nostr.Filter{IDs: []string{slow.ID}})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for range ch {
		found++
	}
	if found != 1 {
		t.Fatal("the in-flight write must be in the store when Serve returns")
	}
}

func TestServeReturnsListenerErrors(t *testing.T) {
	store := openBadger(t, t.TempDir(), false)
	defer store.Close()
	srv, err := New(Options{Events: store}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := srv.Serve(context.Background(), ln); err == nil {
		t.Fatal("Serve on a closed listener must fail")
	}
}

// TestShutdownGraceBoundsTheWait: a write that never finishes cannot hold
// Serve forever; after ShutdownGrace (on the injected clock) Serve returns
// an error naming the unfinished writes.
func TestShutdownGraceBoundsTheWait(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	pipe := &fakePipeline{decide: func(evt *nostr.Event) policy.Decision {
		close(entered)
		<-release
		return policy.Decision{Outcome: policy.Store}
	}}
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	store := openBadger(t, t.TempDir(), false)
	defer store.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{ShutdownGrace: time.Minute, Events: store, Pipeline: pipe}, env.Env{Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	c := connect(t, "ws://"+ln.Addr().String())
	frame, _ := json.Marshal([]any{"EVENT", newKey(t).event(t, 1, fake.Now().Unix(), nil, "stuck")})
	c.send(string(frame))
	<-entered
	cancel()
	if !fake.BlockUntil(1, testwait.Limit(t)) {
		t.Fatal("shutdown never armed its grace timer")
	}
	fake.Advance(time.Minute)
	// Closing the websockets waits up to a second for close frames.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if fake.BlockUntil(1, 10*time.Millisecond) {
				fake.Advance(time.Second)
			}
		}
	}()
	err = <-served
	close(stop)
	if err == nil || !strings.Contains(err.Error(), "1 store writes still in flight") {
		t.Fatalf("Serve must report the unfinished write, got %v", err)
	}
	close(release)
	eventually(t, "the stuck write ends before the store closes", func() bool { return srv.writes.inflight() == 0 })
}
