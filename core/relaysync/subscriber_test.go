package relaysync

import (
	"context"
	"testing"
	"time"

	"github.com/fiatjaf/eventstore/slicestore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/internal/memkv"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/internal/testwait"
)

type subRig struct {
	*harness
	purg   *purgatory.Purgatory
	events *slicestore.SliceStore
	sub    *Subscriber
}

// newSubRig wires a subscriber to a running manager, a purgatory (its
// hooks) and a store, as the server does.
func newSubRig(t *testing.T) *subRig {
	h := newHarness(t, nil)
	p, err := purgatory.New(purgatory.Options{KV: &memkv.KV{}, TTL: time.Minute}, env.Env{Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	events := &slicestore.SliceStore{}
	if err := events.Init(); err != nil {
		t.Fatal(err)
	}
	s, err := NewSubscriber(SubscriberOptions{Manager: h.m, Events: events, Held: p,
		Spawn: func(fn func(context.Context)) { fn(context.Background()) }}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	p.OnHold = append(p.OnHold, s.OnHold)
	p.OnRemove = append(p.OnRemove, s.OnRemove)
	return &subRig{harness: h, purg: p, events: events, sub: s}
}

func (r *subRig) store(evts ...*nostr.Event) {
	for _, e := range evts {
		if err := r.events.SaveEvent(context.Background(), e); err != nil {
			r.t.Fatal(err)
		}
	}
}

// G02-1: a held announcement is followed from the moment it is held (no
// poll), and forgotten when it expires without data; announced again and
// stored, the repo gets its root events stored before back.
func TestG02_SubscriberFollowsPurgatoryThroughItsHooks(t *testing.T) {
	r := newSubRig(t)
	ann := announcement(0, selfURL, r1)
	if err := r.purg.Hold(context.Background(), purgatory.Entry{Event: ann, Repo: nip34.RepoRef{Pubkey: pubkey(0), Identifier: "repo0"}}); err != nil {
		t.Fatal(err)
	}
	r.observe()
	r.take1("connect")
	if s := r.snap(); s.Repos != 1 {
		t.Fatalf("held announcement not followed: %+v", s)
	}
	// expired without git data: forgotten
	r.clk.Advance(2 * time.Minute)
	if _, _, err := r.purg.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.observe()
	if s := r.snap(); s.Repos != 0 {
		t.Fatalf("expired announcement still synced: %+v", s)
	}
	// announced again and stored: its root event stored before is replayed
	root := rootEvent(1617, 1, 0)
	r.store(root, ann)
	r.sub.OnStored(context.Background(), ann)
	r.observe()
	if s := r.snap(); s.Repos != 1 || s.RootEvents != 1 {
		t.Fatalf("returning repo %+v, want it and its stored root event", s)
	}
}

// A stored announcement deleted by its author (NIP-09) stops the repo's
// sync; one that another held version keeps alive does not.
func TestG02_SubscriberForgetsADeletedRepo(t *testing.T) {
	r := newSubRig(t)
	ann0, ann1 := announcement(0, selfURL, r1), announcement(1, selfURL, r1)
	ann1.ID = hexID(2 << 40)
	r.store(ann0, ann1)
	r.sub.OnStored(context.Background(), ann0)
	r.sub.OnStored(context.Background(), ann1)
	r.observe()
	if s := r.snap(); s.Repos != 2 {
		t.Fatalf("stored announcements not followed: %+v", s)
	}
	// repo 1 is deleted from the store but a version of it is still held
	held := announcement(1, selfURL, r1)
	held.ID = hexID(3 << 40)
	if err := r.purg.Hold(context.Background(), purgatory.Entry{Event: held, Repo: nip34.RepoRef{Pubkey: pubkey(1), Identifier: "repo1"}}); err != nil {
		t.Fatal(err)
	}
	for i, ann := range []*nostr.Event{ann0, ann1} {
		if err := r.events.DeleteEvent(context.Background(), ann); err != nil {
			t.Fatal(err)
		}
		del := &nostr.Event{ID: hexID(10 + i), PubKey: ann.PubKey, Kind: 5, Tags: nostr.Tags{{"a", repoAddr(i)}}}
		r.sub.OnStored(context.Background(), del)
	}
	r.observe()
	if s := r.snap(); s.Repos != 1 {
		t.Fatalf("after deleting both, %d repos synced; want only the one still held", s.Repos)
	}
}

// At start the subscriber feeds the manager the store's history and what
// purgatory already holds (a restart loses neither).
func TestG02_SubscriberStartsFromHistoryAndPurgatory(t *testing.T) {
	r := newSubRig(t)
	// a second manager, run by the subscriber itself
	m, err := NewManager(Options{Conns: &fakeConns{}, Health: &fakeHealth{}, Self: []string{selfURL}, Rand: func() float64 { return 0.5 }}, env.Env{Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSubscriber(SubscriberOptions{Manager: m, Events: r.events, Held: r.purg}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	r.store(announcement(0, selfURL, r1), rootEvent(1617, 1, 0))
	held := announcement(1, selfURL, r1)
	held.ID = hexID(2 << 40)
	if err := r.purg.Hold(context.Background(), purgatory.Entry{Event: held, Repo: nip34.RepoRef{Pubkey: pubkey(1), Identifier: "repo1"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	testwait.Stepping(t, "both repos and the root event after start", func() { r.clk.Advance(m.o.Config.BatchWindow.D()) }, func() bool {
		snap, err := m.Snapshot(testwait.Context(t))
		return err == nil && snap.Repos == 2 && snap.RootEvents == 1
	})
}

// G08-7: a private repository's events are never synced (no REQ filter or
// negentropy fingerprint names them to another relay), whether stored,
// held or replayed; a repository that turns private is forgotten; a public
// one next to it is synced (positive control).
func TestG08_7_SubscriberNeverSyncsPrivateRepositories(t *testing.T) {
	r := newSubRig(t)
	private := map[string]bool{}
	r.sub.private = func(evt *nostr.Event) bool { return private[evt.ID] }
	pub, priv := announcement(0, selfURL, r1), announcement(1, selfURL, r1)
	priv.ID = hexID(2 << 40)
	private[priv.ID] = true
	root := rootEvent(1617, 1, 1)
	private[root.ID] = true
	r.store(pub, priv, root)
	for _, e := range []*nostr.Event{pub, priv, root} {
		r.sub.OnStored(context.Background(), e)
	}
	held := announcement(2, selfURL, r1)
	held.ID = hexID(3 << 40)
	private[held.ID] = true
	if err := r.purg.Hold(context.Background(), purgatory.Entry{Event: held, Repo: nip34.RepoRef{Pubkey: pubkey(2), Identifier: "repo2"}}); err != nil {
		t.Fatal(err)
	}
	r.observe()
	if s := r.snap(); s.Repos != 1 || s.RootEvents != 0 {
		t.Fatalf("synced %+v, want only the public repository", s)
	}
	// the public repository turns private: its new announcement is not
	// observed and the repository is forgotten
	turned := announcement(0, selfURL, r1)
	turned.ID = hexID(4 << 40)
	private[turned.ID] = true
	r.sub.OnStored(context.Background(), turned)
	r.observe()
	if s := r.snap(); s.Repos != 0 {
		t.Fatalf("a repository that turned private is still synced: %+v", s)
	}
}

// Issue 27 part 2: Replayed is called once the manager holds everything
// the start-up replay read, without waiting for the batch window (the
// fake clock never moves here), so the server can return the replay's
// garbage to the system while it is all garbage.
func TestReplayedCalledOnceTheHistoryIsApplied(t *testing.T) {
	r := newSubRig(t)
	m, err := NewManager(Options{Conns: &fakeConns{}, Health: &fakeHealth{}, Self: []string{selfURL}, Rand: func() float64 { return 0.5 }}, env.Env{Clock: r.clk})
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ repos, roots int }
	got := make(chan counts, 1)
	s, err := NewSubscriber(SubscriberOptions{Manager: m, Events: r.events, Held: r.purg, Replayed: func() {
		snap, err := m.Snapshot(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- counts{snap.Repos, snap.RootEvents}
	}}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	r.store(announcement(0, selfURL, r1), rootEvent(1617, 1, 0), rootEvent(1621, 2, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case c := <-got:
		if c.repos != 1 || c.roots != 2 {
			t.Errorf("when Replayed was called the manager held %d repositories and %d root events, want 1 and 2", c.repos, c.roots)
		}
	case <-testwait.Context(t).Done():
		t.Fatal("Replayed was never called")
	}
}
