package relaysync

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
)

// Events is the part of the main store the self-subscriber reads.
type Events interface {
	QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error)
}

// Held is the part of purgatory the self-subscriber reads.
type Held interface {
	Find(keep func(e *purgatory.Entry) bool) []purgatory.Entry
	HasAnnouncement(repo nip34.RepoRef) bool
}

// SubscriberOptions are what the self-subscriber reads and feeds.
type SubscriberOptions struct {
	Manager *Manager // required
	Events  Events   // required: the main store
	Held    Held     // required: purgatory
	// Spawn runs a replay off the writing goroutine, owned by the server so
	// it never outlives the store; nil runs it on its own goroutine.
	Spawn func(func(ctx context.Context))
	// Private reports events of private repositories (GRASP-08): they are
	// never synced, so no REQ or negentropy fingerprint names them to
	// another relay, and a repository that turns private is forgotten.
	// nil: nothing is private.
	Private func(evt *nostr.Event) bool
	// Replayed is called once Run has read the store's history (whether
	// or not it could) and the manager has applied it: the server hands
	// the start-up's garbage back to the system then. nil: nothing is
	// called.
	Replayed func()
}

// maxForgotten bounds the memory of forgotten repos awaiting a return.
const maxForgotten = 10000

// Subscriber is GRASP-02's self-subscriber: it tells the manager what this
// server accepts. Stored announcements and root events reach it from the
// store's history when it starts and from the relay's OnStored hook after;
// announcements held in purgatory (synced at the state-only level) and
// their removal reach it from purgatory's OnHold and OnRemove hooks, so it
// never polls. It owns the memory of forgotten repos: a repo whose
// announcement is gone is forgotten by the manager, and if it is announced
// again its root events stored before are replayed.
type Subscriber struct {
	mgr    *Manager
	events Events
	held   Held
	spawn  func(func(ctx context.Context))
	log    hclog.Logger
	// private: see SubscriberOptions.Private
	private  func(evt *nostr.Event) bool
	replayed func()

	mu        sync.Mutex
	forgotten map[string]bool // repo address -> forgotten, awaiting a return
}

// NewSubscriber builds the self-subscriber; register its OnStored with the
// relay and its OnHold and OnRemove with purgatory before the first event.
func NewSubscriber(o SubscriberOptions, e env.Env) (*Subscriber, error) {
	if o.Manager == nil || o.Events == nil || o.Held == nil {
		return nil, errors.New("sync subscriber: Manager, Events and Held are required")
	}
	e = e.OrDefaults()
	s := &Subscriber{mgr: o.Manager, events: o.Events, held: o.Held, spawn: o.Spawn, log: e.Log, forgotten: map[string]bool{}, private: o.Private, replayed: o.Replayed}
	if s.spawn == nil {
		s.spawn = func(fn func(context.Context)) { go fn(context.Background()) }
	}
	return s, nil
}

// Run runs the manager and feeds it the store's history and the held
// announcements; it returns when the manager stops (ctx ended). The hooks
// are registered before Run reads the history, so nothing stored in between
// is missed; seeing an event twice is harmless.
func (s *Subscriber) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.mgr.Run(ctx) }()
	if err := replayHistory(ctx, s.events, syncKinds(), s.observeAll); err != nil && ctx.Err() == nil {
		// Repositories whose history could not be read are synced once they
		// next see an event; sync of the rest goes on.
		s.log.Error("reading stored announcements for sync failed", "error", err)
	}
	if s.mgr.o.Config.Outbox {
		// After the root events (batches keep their order), so replies
		// find the roots they answer.
		if err := replayHistory(ctx, s.events, outboxKinds, s.observeAll); err != nil && ctx.Err() == nil {
			s.log.Error("reading stored replies and relay lists for outbox sync failed", "error", err)
		}
	}
	for _, e := range s.held.Find(func(e *purgatory.Entry) bool { return e.Event.Kind == nip34.KindAnnouncement }) {
		s.OnHold(e)
	}
	if s.replayed != nil {
		s.mgr.applyObserved(ctx)
		if ctx.Err() == nil {
			s.replayed()
		}
	}
	return <-errc
}

// OnStored is the relay's hook for every stored event (client, sync or a
// release from purgatory).
func (s *Subscriber) OnStored(ctx context.Context, evt *nostr.Event) {
	if !s.observe(evt) {
		return
	}
	switch evt.Kind {
	case nip34.KindAnnouncement:
		addr := nip34.RepoRef{Pubkey: evt.PubKey, Identifier: evt.Tags.GetD()}.String()
		s.mu.Lock()
		back := s.forgotten[addr]
		delete(s.forgotten, addr)
		s.mu.Unlock()
		if back {
			// Observe re-adds the repo, but its root events stored before
			// were observed once and forgotten with it: replay them, off
			// the writing goroutine.
			s.spawn(func(ctx context.Context) { s.replayRoots(ctx, addr) })
		}
	case nip34.KindDeletion:
		// a deleted stored announcement (the store already dropped it):
		// sync of that repo stops unless another version remains
		for _, t := range evt.Tags {
			if len(t) < 2 || t[0] != "a" {
				continue
			}
			if ref, err := nip34.ParseRepoRef(t[1]); err == nil && ref.Pubkey == evt.PubKey {
				s.forgetIfGone(ctx, ref)
			}
		}
	}
}

// OnHold is purgatory's hook for a held event: a held announcement's repo is
// synced at the state-only level (the seed's StateOnly: its relays connected
// for announcements and states, which is how a state and then its git data
// arrive, G02-1); full sync of its issues and comments starts once it is
// stored, so a flood of announcements that never get data costs few
// subscriptions.
func (s *Subscriber) OnHold(e purgatory.Entry) {
	if e.Event.Kind == nip34.KindAnnouncement && !s.skipPrivate(e.Event) {
		s.mgr.ObserveHeld(e.Event)
	}
}

// OnRemove is purgatory's hook for an event leaving it: a held announcement
// that expired, was evicted or was deleted stops the repo's sync, unless
// another version of it remains stored or held. (Released and replaced
// announcements are observed again as stored or held.)
func (s *Subscriber) OnRemove(e purgatory.Entry, why string) {
	if e.Event.Kind != nip34.KindAnnouncement || why == "released" || why == "replaced" {
		return
	}
	s.forgetIfGone(context.Background(), e.Repo)
}

// forgetIfGone forgets repo when no announcement of it is stored or held.
func (s *Subscriber) forgetIfGone(ctx context.Context, repo nip34.RepoRef) {
	if s.held.HasAnnouncement(repo) {
		return
	}
	f := nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Authors: []string{repo.Pubkey}, Tags: nostr.TagMap{"d": {repo.Identifier}}, Limit: 1}
	if n, _, _, err := queryInto(ctx, s.events, f, func(*nostr.Event) {}); err != nil || n > 0 {
		return
	}
	addr := repo.String()
	s.mu.Lock()
	if len(s.forgotten) >= maxForgotten {
		// repos that never come back: forgetting them costs a returning
		// one its replay (its new root events still sync), not memory
		clear(s.forgotten)
	}
	s.forgotten[addr] = true
	s.mu.Unlock()
	s.mgr.Forget(addr)
}

// replayRoots observes the stored root events of one repo again.
func (s *Subscriber) replayRoots(ctx context.Context, addr string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, _, _, err := queryInto(ctx, s.events, nostr.Filter{Kinds: nip34.RootKinds(), Tags: nostr.TagMap{"a": {addr}}}, s.observeAll); err != nil {
		s.log.Warn("replaying root events of a returning repo for sync", "repo", addrRepo(addr).URLPath(), "error", err)
	}
}

// observe hands evt to the manager unless it is private; it reports
// whether it did.
func (s *Subscriber) observe(evt *nostr.Event) bool {
	if s.skipPrivate(evt) {
		return false
	}
	s.mgr.Observe(evt)
	return true
}

func (s *Subscriber) observeAll(evt *nostr.Event) { s.observe(evt) }

// skipPrivate reports a private event; a private announcement's repository
// is forgotten, so one that turns private stops syncing.
func (s *Subscriber) skipPrivate(evt *nostr.Event) bool {
	if s.private == nil || !s.private(evt) {
		return false
	}
	if evt.Kind == nip34.KindAnnouncement {
		s.mgr.Forget(nip34.RepoRef{Pubkey: evt.PubKey, Identifier: evt.Tags.GetD()}.String())
	}
	return true
}
