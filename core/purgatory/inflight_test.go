package purgatory

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// gatedKV is a side table whose chosen writes take as long as the test
// says: like an fsync or a PostgreSQL commit that is slow for one entry.
type gatedKV struct {
	memkv.KV
	mu      sync.Mutex
	gates   map[string]chan struct{}
	entered chan string
}

func newGatedKV() *gatedKV {
	return &gatedKV{gates: map[string]chan struct{}{}, entered: make(chan string, 16)}
}

// gate makes the op ("put", "delete") on bucket/key wait until the
// returned channel is closed.
func (g *gatedKV) gate(op, bucket, key string) chan struct{} {
	ch := make(chan struct{})
	g.mu.Lock()
	g.gates[op+" "+bucket+"/"+key] = ch
	g.mu.Unlock()
	return ch
}

func (g *gatedKV) wait(op, bucket, key string) {
	name := op + " " + bucket + "/" + key
	g.mu.Lock()
	ch := g.gates[name]
	g.mu.Unlock()
	if ch != nil {
		g.entered <- name
		<-ch
	}
}

func (g *gatedKV) Put(ctx context.Context, bucket, key string, val []byte, ttl time.Duration) error {
	g.wait("put", bucket, key)
	return g.KV.Put(ctx, bucket, key, val, ttl)
}

func (g *gatedKV) Delete(ctx context.Context, bucket, key string) error {
	g.wait("delete", bucket, key)
	return g.KV.Delete(ctx, bucket, key)
}

// entered waits until a gated write has started.
func (g *gatedKV) started(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-testwait.After(t):
		t.Fatal("the gated write never started")
	}
}

// within returns what fn returns, failing the test if it does not return
// while the gated write is still held back (release lets that write
// through so the test can end).
func within[T any](t *testing.T, what string, release chan struct{}, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-testwait.After(t):
		close(release)
		t.Fatalf("%s waited for another entry's durable write", what)
		panic("unreachable")
	}
}

// Issue 28 part 5: purgatory's lock is not held across the durable write.
// While one event's write is slow, another event is held at once; the slow
// one is not visible until durable but counts toward the quotas already,
// and a second hold of it waits for the first and is a duplicate: held
// once, announced once.
func TestHoldDoesNotWaitForAnotherEntrysDurableWrite(t *testing.T) {
	ctx := context.Background()
	kv := newGatedKV()
	p, err := New(Options{KV: kv, Quotas: Quotas{MaxHeld: 2}}, env.Env{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	holds := map[string]int{}
	p.OnHold = append(p.OnHold, func(e Entry) { mu.Lock(); holds[e.Event.ID]++; mu.Unlock() })
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	pr := func(n int64) Entry {
		evt := signed(t, sk, 1618, t0.Add(time.Duration(n)*time.Second), nostr.Tags{{"a", "30617:" + pk + ":r"}})
		return Entry{Event: evt, Repo: repo, Needs: []string{hexID('a')}}
	}
	a, b, c := pr(1), pr(2), pr(3)

	slow := kv.gate("put", bucketHeld, a.Event.ID)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- p.Hold(ctx, a) }()
	kv.started(t)
	go func() { second <- p.Hold(ctx, a) }()

	if err := within(t, "holding another event", slow, func() error { return p.Hold(ctx, b) }); err != nil {
		t.Fatalf("hold of b: %v", err)
	}
	if _, ok := p.Get(a.Event.ID); ok {
		t.Fatal("a is visible before its write is durable")
	}
	if got := within(t, "a read", slow, p.Len); got != 1 {
		t.Fatalf("%d held while a is written, want 1 (b)", got)
	}
	// a counts toward MaxHeld while it is written: c finds no place
	var quota *QuotaError
	if err := p.Hold(ctx, c); !errors.As(err, &quota) {
		t.Fatalf("hold of c with a and b taking both places: %v, want a QuotaError", err)
	}

	close(slow)
	for name, ch := range map[string]chan error{"first": first, "second": second} {
		select {
		case err := <-ch:
			switch {
			case name == "first" && err != nil:
				t.Fatalf("the slow hold of a: %v", err)
			case name == "second" && !errors.Is(err, ErrDuplicate):
				t.Fatalf("the second hold of a: %v, want ErrDuplicate", err)
			}
		case <-testwait.After(t):
			t.Fatalf("the %s hold of a never returned", name)
		}
	}
	if _, ok := p.Get(a.Event.ID); !ok || p.Len() != 2 {
		t.Fatalf("after a's write: a held %v, %d held; want a and b", ok, p.Len())
	}
	mu.Lock()
	defer mu.Unlock()
	if holds[a.Event.ID] != 1 || holds[b.Event.ID] != 1 || holds[c.Event.ID] != 0 {
		t.Fatalf("OnHold calls %v, want a and b once each", holds)
	}
}

// While the removal of a published event is written, the event is still
// held (a crash now releases it again at start) but no other Release hands
// it out a second time, and other repositories' releases go on.
func TestReleaseWhilePublishedIsWrittenHandsNothingOutTwice(t *testing.T) {
	ctx := context.Background()
	kv := newGatedKV()
	p := newP(t, kv, clock.NewFake(t0))
	var mu sync.Mutex
	var gone []string
	p.OnRemove = append(p.OnRemove, func(e Entry, why string) { mu.Lock(); gone = append(gone, why); mu.Unlock() })
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	repo := nip34.RepoRef{Pubkey: pk, Identifier: "r"}
	evt := signed(t, sk, 1618, t0, nostr.Tags{{"a", "30617:" + pk + ":r"}})
	if err := p.Hold(ctx, Entry{Event: evt, Repo: repo, Needs: []string{hexID('a')}}); err != nil {
		t.Fatal(err)
	}
	all := func([]string) bool { return true }
	evs, err := p.Release(repo, true, all)
	if err != nil || len(evs) != 1 {
		t.Fatalf("release: %v, %v", evs, err)
	}

	slow := kv.gate("delete", bucketHeld, evt.ID)
	published := make(chan error, 1)
	go func() { published <- p.Published(ctx, evs) }()
	kv.started(t)
	again := within(t, "a release", slow, func() []*nostr.Event {
		evs, _ := p.Release(repo, true, all)
		return evs
	})
	if len(again) != 0 {
		t.Fatalf("released again while its removal is written: %v", again)
	}
	if _, ok := p.Get(evt.ID); !ok {
		t.Fatal("the event left purgatory before its removal was durable")
	}
	close(slow)
	select {
	case err := <-published:
		if err != nil {
			t.Fatal(err)
		}
	case <-testwait.After(t):
		t.Fatal("Published never returned")
	}
	mu.Lock()
	defer mu.Unlock()
	if p.Len() != 0 || len(gone) != 1 || gone[0] != "released" {
		t.Fatalf("after Published: %d held, OnRemove %v", p.Len(), gone)
	}
}
