package store

import (
	"context"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// What the grasp instances sharing one store need of each other: the
// events and side-table changes of the others (Follow), one leader for the
// singletons (Lead) and the per-repository git lock (RepoLocker). The
// PostgreSQL backend provides them (pg_feed.go, pg_lease.go, pg_lock.go);
// the badger backend has one process, which follows no one, leads alone
// and needs no shared lock (badger_store.go).

// Follower receives what other instances on the same PostgreSQL database
// change.
type Follower struct {
	// Stored gets each event another instance stored, once, in the order
	// they committed. Required.
	Stored func(evt *nostr.Event)
	// SideChanged gets each side-table entry (bucket, key) another
	// instance (or this one) put or deleted; nil: not followed.
	SideChanged func(bucket, key string)
	// Resync runs after the connection was lost and re-established:
	// side-table notifications may have been missed meanwhile. Events are
	// caught up by the store itself.
	Resync func()
}

// Shared reports whether other grasp instances may write the same store
// (backend postgres): then Follow delivers what they write.
func (s *Store) Shared() bool { return s.be.shared() }

// Follow delivers, until ctx ends, the events other instances store and the
// side-table changes, through one LISTEN connection that reconnects by
// itself. A notification carries only the id; the event is loaded here, a
// batch at a time. After a lost connection the events stored meanwhile are
// caught up by their stored_at (the database's clock), at most pgCatchUpMax
// of them, and every event is delivered at most once. With badger it
// returns an error at once: a badger store has no other writers.
func (s *Store) Follow(ctx context.Context, f Follower) error { return s.be.follow(ctx, f) }

// CaughtUp returns once Follow has delivered every event and side-table
// change the instances sharing the store committed before CaughtUp was
// called: what another instance answered OK true to (a state it holds in
// purgatory) is then known here too. A decision on this instance that
// follows a client's action through another one (a push right after the
// state it needs was published elsewhere, behind a load balancer) asks it
// first. It costs one NOTIFY and the wait for it to come back through the
// LISTEN connection, after what is queued there. It returns nil at once
// with badger or while no Follow runs, and an error when ctx ends or the
// marker is not back within pgCaughtUpBound on the store's clock (a LISTEN
// connection being re-established): the caller then goes on with what it
// knows.
func (s *Store) CaughtUp(ctx context.Context) error { return s.be.caughtUp(ctx) }

// LeadOptions configure Lead.
type LeadOptions struct {
	// Lease bounds how long a dead or cut-off leader keeps the singletons:
	// the leader confirms its session every Lease/3 and steps down when it
	// cannot, a follower asks for the lease every Lease/3. Required.
	Lease time.Duration
	// OnChange is told when this instance becomes leader (true) and when
	// it stops being one (false); nil: not told.
	OnChange func(leader bool)
}

// Lead runs lead while this instance is the leader of the instances sharing
// the store, until ctx ends: lead gets a context that ends when leadership
// is lost, and must return then. With badger the store has one process,
// which leads at once and for good.
//
// With PostgreSQL the lease is a session advisory lock held on one
// connection: when the leader's process dies or its session is closed, the
// server drops the lock and a follower takes it at its next try, within
// Lease/3; a leader that cannot confirm its session within Lease/3 stops
// its singletons first. Times are on the store's clock.
func (s *Store) Lead(ctx context.Context, o LeadOptions, lead func(ctx context.Context)) error {
	if o.OnChange == nil {
		o.OnChange = func(bool) {}
	}
	return s.be.lead(ctx, o, lead)
}

// RepoLocker is the per-repository write lock shared by every grasp
// instance on the database (git.Locker): a PostgreSQL session advisory
// lock. If the instance dies, its sessions end and the server releases its
// locks. nil with badger, whose store is single-process.
//
// Every lock no other instance holds is taken on one session (the lock
// session), whatever the number of repositories written at once: a
// connection per lock let pushes take as many connections as they liked
// (audit 2026-11b, F25). Only a lock another instance holds is waited for,
// on a connection of the small lock pool (pg_pool.go), blocked in the
// server until it is granted.
func (s *Store) RepoLocker() *PGRepoLocker { return s.be.repoLocker() }
