package relay

import (
	"context"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"

	"github.com/fiatjaf/eventstore"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/outcome"
)

// NIP-09 here has one owner: deletedByAuthor is the only "was this event
// deleted by its author" check of grasp (it runs for client, sync and
// purgatory events alike, with msgDeleted as the one answer), and
// deleteTargets the only place a deletion request removes stored events.

// resDeleted answers an event its author has deleted.
var (
	resDeleted = outcome.New(outcome.Blocked, "this event was deleted by its author")
	msgDeleted = resDeleted.Text()
)

// deletedByAuthor reports whether the author has deleted evt: by id, or, for
// replaceable and addressable kinds, by address with a deletion not older
// than evt. Only deletions signed by evt's author count. The tombstone index
// answers for almost every event without a query.
func (s *Server) deletedByAuthor(ctx context.Context, evt *nostr.Event) (bool, error) {
	byID, byAddr := s.deletions.mayMatch(evt)
	if byID {
		f := nostr.Filter{Kinds: []int{5}, Authors: []string{evt.PubKey}, Tags: nostr.TagMap{"e": {evt.ID}}, Limit: 1}
		if found, err := s.any(ctx, f); err != nil || found {
			return found, err
		}
	}
	if !byAddr {
		return false, nil
	}
	since := evt.CreatedAt
	f := nostr.Filter{Kinds: []int{5}, Authors: []string{evt.PubKey}, Tags: nostr.TagMap{"a": {address(evt)}}, Since: &since, Limit: 1}
	return s.any(ctx, f)
}

func address(evt *nostr.Event) string {
	return fmt.Sprintf("%d:%s:%s", evt.Kind, evt.PubKey, evt.Tags.GetD())
}

func (s *Server) any(ctx context.Context, f nostr.Filter) (bool, error) {
	ch, err := s.store.QueryEvents(ctx, f)
	if err != nil {
		return false, fmt.Errorf("query %v: %w", f, err)
	}
	found := false
	for range ch {
		found = true
	}
	return found, nil
}

// deleteTargets removes the stored events a deletion request names (by id,
// or by address up to the request's created_at). A request naming a stored
// event of someone else is refused whole, before anything is deleted. It
// returns the refusal when the request is refused or a removal failed.
func (s *Server) deleteTargets(ctx context.Context, del *nostr.Event) (outcome.Result, bool) {
	var targets []*nostr.Event
	for _, tag := range del.Tags {
		if len(tag) < 2 {
			continue
		}
		var f nostr.Filter
		switch tag[0] {
		case "e":
			f = nostr.Filter{IDs: []string{tag[1]}, Limit: 1}
		case "a":
			parts := strings.SplitN(tag[1], ":", 3)
			if len(parts) != 3 {
				continue
			}
			kind, err := strconv.Atoi(parts[0])
			if err != nil {
				continue
			}
			until := del.CreatedAt
			f = nostr.Filter{Kinds: []int{kind}, Authors: []string{parts[1]},
				Tags: nostr.TagMap{"d": []string{parts[2]}}, Until: &until, Limit: 10}
		default:
			continue
		}
		ch, err := s.store.QueryEvents(ctx, f)
		if err != nil {
			s.log.Warn("deletion target lookup failed", "deletion", del.ID, "error", err)
			continue
		}
		for e := range ch {
			targets = append(targets, e)
		}
	}
	for _, t := range targets {
		if t.PubKey != del.PubKey {
			return outcome.New(outcome.Blocked, "you are not the author of this event"), true
		}
	}
	for _, t := range targets {
		if err := s.deleteEvent(ctx, t); err != nil {
			if r, ok := outcome.Of(err); ok {
				return r, true
			}
			return outcome.Refused(err.Error(), outcome.Error), true
		}
	}
	return outcome.Result{}, false
}

// tombstones is the index behind deletedByAuthor: 64-bit keys of every
// target (event id, address) that a stored deletion request names,
// whoever signed it. An event whose id and address are absent was not
// deleted, and no query is made; a present key (a deletion by someone, or
// a hash collision) is settled by the query. It is loaded from the store at
// start and fed by every deletion written through this relay, so it is
// complete for one grasp process per store. About 16 bytes per target.
//
// A store other instances write too (PostgreSQL, Options.Shared) takes
// deletions this process never sees written: the index is then never
// complete and every write is settled by the query, which reads the shared
// store. Feeding it the deletions the fan-out delivers would still miss
// one stored a moment before a write here (the notification had not
// arrived), and a client publishing on B right after deleting on A is
// exactly that (issue 24 part 8).
type tombstones struct {
	mu       sync.RWMutex
	keys     map[uint64]struct{}
	complete bool // false: the store held more deletions than one load returns, or is shared
}

var addrSeed = maphash.MakeSeed()

// idKey is the first 8 bytes of an event id (a hash: uniform already).
func idKey(id string) uint64 {
	var b [8]byte
	if len(id) < 16 {
		return maphash.String(addrSeed, id)
	}
	if _, err := hex.Decode(b[:], []byte(id[:16])); err != nil {
		return maphash.String(addrSeed, id)
	}
	var k uint64
	for _, c := range b {
		k = k<<8 | uint64(c)
	}
	return k
}

func addrKey(addr string) uint64 { return maphash.String(addrSeed, "a:"+addr) }

// loadTombstones reads every stored deletion request. The query runs as a
// negentropy session, which the store caps at one more than max; a store
// answering with more than max leaves the index incomplete, and every event
// is then checked by query. A shared store is never indexed (see
// tombstones).
func loadTombstones(ctx context.Context, store eventstore.Store, max int, shared bool) (*tombstones, error) {
	if shared {
		return &tombstones{keys: map[uint64]struct{}{}}, nil
	}
	t := &tombstones{keys: map[uint64]struct{}{}, complete: true}
	ch, err := store.QueryEvents(eventstore.SetNegentropy(ctx), nostr.Filter{Kinds: []int{5}})
	if err != nil {
		return nil, fmt.Errorf("load deletion requests: %w", err)
	}
	n := 0
	for del := range ch {
		n++
		t.add(del)
	}
	t.complete = n <= max
	return t, nil
}

func (t *tombstones) add(del *nostr.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tag := range del.Tags {
		if len(tag) < 2 {
			continue
		}
		switch tag[0] {
		case "e":
			t.keys[idKey(tag[1])] = struct{}{}
		case "a":
			t.keys[addrKey(tag[1])] = struct{}{}
		}
	}
}

// mayMatch reports whether a deletion may name evt by id, and by address.
func (t *tombstones) mayMatch(evt *nostr.Event) (byID, byAddr bool) {
	addressable := !nostr.IsRegularKind(evt.Kind)
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !t.complete {
		return true, addressable
	}
	_, byID = t.keys[idKey(evt.ID)]
	if addressable {
		_, byAddr = t.keys[addrKey(address(evt))]
	}
	return byID, byAddr
}
