package relay

import (
	"context"
	"sync"

	"github.com/fiatjaf/khatru"
	"github.com/nbd-wtf/go-nostr"
)

// registry is our own list of live subscriptions. khatru keeps one too, but
// reads it without its lock when broadcasting; ours is the one we broadcast
// from. Filters are registered as khatru accepts them (RejectFilter, or
// OverwriteFilter for limit:0) and dropped when the REQ's context ends: khatru
// cancels it on CLOSE, on a rejected sibling filter and on disconnect.
type registry struct {
	mu   sync.RWMutex
	subs map[subKey]*subEntry
}

type subKey struct {
	ws *khatru.WebSocket
	id string
}

type subEntry struct {
	req     context.Context
	filters []nostr.Filter
}

func newRegistry() *registry { return &registry{subs: make(map[subKey]*subEntry)} }

func (s *Server) subscribe(ctx context.Context, f nostr.Filter) {
	ws := khatru.GetConnection(ctx)
	id, ok := subscriptionID(ctx)
	if ws == nil || !ok {
		return
	}
	s.subs.add(ctx, subKey{ws, id}, f)
}

func (r *registry) add(req context.Context, key subKey, f nostr.Filter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.subs[key]
	if e != nil && e.req == req {
		e.filters = append(e.filters, f)
		return
	}
	// NIP-01: a REQ with an existing id replaces that subscription.
	r.subs[key] = &subEntry{req: req, filters: []nostr.Filter{f}}
	context.AfterFunc(req, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if cur := r.subs[key]; cur != nil && cur.req == req {
			delete(r.subs, key)
		}
	})
}

type delivery struct {
	ws *khatru.WebSocket
	id string
}

// broadcast sends evt to every live subscription that matches it and
// returns how many received it. Writes happen outside the registry lock so a
// slow socket delays only this broadcast, not subscription changes.
func (s *Server) broadcast(evt *nostr.Event) int {
	var targets []delivery
	s.subs.mu.RLock()
	for key, e := range s.subs.subs {
		for i := range e.filters {
			if e.filters[i].Matches(evt) {
				targets = append(targets, delivery(key))
				break
			}
		}
	}
	s.subs.mu.RUnlock()
	n := 0
	for _, t := range targets {
		id := t.id
		if err := t.ws.WriteJSON(nostr.EventEnvelope{SubscriptionID: &id, Event: *evt}); err == nil {
			n++
		}
	}
	return n
}

func (r *registry) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.subs)
}
