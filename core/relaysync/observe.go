package relaysync

import (
	"context"
	"slices"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// update is one observed fact, parsed on the caller's goroutine so the
// batch holds a few strings instead of whole events.
type update struct {
	addr      string   // announcement coordinate
	relays    []string // announcement relays
	listsSelf bool     // hosted here (Options.Hosted)
	archived  bool     // GRASP-05
	id        string   // root event id
	addrs     []string // repositories the root event tags
	forget    bool     // Forget(addr)
	held      bool     // ObserveHeld
	// GRASP-03 (outbox.go)
	people  []string // participants a root event or reply names
	replyTo []string // e/E/q values of a reply
	writer  string   // author of a relay list
	writes  []string // its write relays
}

// Observe feeds the self-subscriber with an accepted event: announcements
// (30617) and root events (1617/1618/1619/1621); with outbox sync (GRASP-03)
// also replies to root events and NIP-65 relay lists; other kinds are
// ignored.
// Call it for the store's history at startup and from the relay's OnStored
// callback; a fresh database simply starts with no history. Events are
// applied in batches: the window starts at the first event and is not
// extended by later ones, so a steady stream cannot postpone syncing.
func (m *Manager) Observe(evt *nostr.Event) {
	u, ok := m.parse(evt)
	if !ok {
		return
	}
	m.enqueue(u)
}

// maxObserved bounds a batch: a full one is handed to the actor at once,
// its window still open. An update holds the strings of the decoded event
// it came from, and the start-up replay observes every root event and reply
// in the store as fast as the store reads them: a 5-second window of it
// held ~230 MB at a million events (issue 27 part 2). Live traffic rarely
// fills one (2,000 events a second for the whole window); the replay then
// waits for the actor to take each batch, so at most two are held.
const maxObserved = 10000

// enqueue adds u to the current batch, starting the window if none is open.
func (m *Manager) enqueue(u update) {
	m.obsMu.Lock()
	m.obs = append(m.obs, u)
	full := len(m.obs) >= maxObserved
	arm := !m.obsArmed && !full
	m.obsArmed = m.obsArmed || arm
	m.obsMu.Unlock()
	switch {
	case full:
		// A window timer still armed flushes what came after, earlier than
		// its own window: harmless, batches keep their order.
		m.flushObserved()
	case arm:
		m.clk.AfterFunc(m.o.Config.BatchWindow.D(), m.flushObserved)
	}
}

// flushObserved hands the batch to the actor. It sends while holding obsMu
// so that batches reach the actor in the order they were collected: the
// next batch's timer may fire as soon as obsArmed is cleared, and a Forget
// overtaken by the Observe before it would be undone. The actor never takes
// obsMu, so the wait is bounded by the actor draining its inbox.
func (m *Manager) flushObserved() {
	m.obsMu.Lock()
	defer m.obsMu.Unlock()
	batch := m.obs
	m.obs = nil
	m.obsArmed = false
	if len(batch) > 0 {
		m.send(func() { m.applyUpdates(batch) })
	}
}

// applyObserved hands the current batch to the actor now, without waiting
// for its window, and returns once the actor has applied it (or ctx ended,
// or the manager stopped): the subscriber calls it at the end of its
// start-up replay, whose last batch otherwise holds up to a window's worth
// of updates for nothing.
func (m *Manager) applyObserved(ctx context.Context) {
	m.flushObserved()
	done := make(chan struct{})
	select {
	case m.inbox <- func() { close(done) }:
	case <-m.stopped:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-m.stopped:
	case <-ctx.Done():
	}
}

func (m *Manager) parse(evt *nostr.Event) (update, bool) {
	if evt == nil || !nip34.IsHex64(evt.PubKey) {
		return update{}, false
	}
	if evt.Kind == nip34.KindAnnouncement {
		d := evt.Tags.GetD()
		u := update{addr: "30617:" + evt.PubKey + ":" + d}
		for _, t := range evt.Tags {
			if len(t) >= 2 && t[0] == "relays" {
				u.relays = append(u.relays, t[1:]...)
			}
		}
		if m.o.Hosted != nil {
			u.listsSelf, u.archived = m.o.Hosted(evt)
		} else {
			for _, r := range u.relays {
				if n, err := nip34.NormalizeRelayURL(r); err == nil && slices.Contains(m.o.Self, n) {
					u.listsSelf = true
					break
				}
			}
		}
		return u, true
	}
	// Root events (nip34.IsRootKind): layer 3 follows their ids.
	if nip34.IsRootKind(evt.Kind) {
		if !nip34.IsHex64(evt.ID) {
			return update{}, false
		}
		u := update{id: evt.ID}
		for _, t := range evt.Tags {
			if len(t) >= 2 && t[0] == "a" && strings.HasPrefix(t[1], "30617:") {
				u.addrs = append(u.addrs, t[1])
			}
		}
		if m.o.Config.Outbox {
			u.people = participants(evt, m.o.Config.OutboxParticipantsPerRoot)
		}
		return u, len(u.addrs) > 0
	}
	if m.o.Config.Outbox {
		return m.parseOutbox(evt)
	}
	return update{}, false
}
