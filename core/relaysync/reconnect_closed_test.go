package relaysync

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// G02 reconnect, the failed half: a quick reconnect resubscribes the
// confirmed items from just before the gap. If that catch-up ends before
// its EOSE (a round timeout, a dial cancelled, a CLOSED), what the relay
// got during the gap was never fetched; the items must not stay confirmed,
// or nothing asks for them again until the daily fresh sync.
func TestG02_QuickReconnectCatchUpClosedEarlyAsksForItsItemsAgain(t *testing.T) {
	h := newHarness(t, nil)
	h.initialSync(3)
	h.m.Disconnected(r1, nil)
	h.snap()
	h.take1("connect")
	h.clk.Advance(time.Minute)
	h.m.Connected(r1)
	h.snap()
	_, items := split(h.conns.take())
	if len(items) == 0 {
		t.Fatal("quick reconnect resubscribed no items")
	}
	for _, c := range items {
		if c.filters[0].Since == nil {
			t.Fatalf("quick reconnect item subscription without since: %+v", c)
		}
	}
	if r := h.relay(r1); r.ConfirmedEvents != 3 {
		t.Fatalf("before the failure: %+v", r)
	}

	h.m.SubscriptionClosed(r1, items[0].sub, "error: catch-up failed: page events: no answer from the peer in time (15s)")
	h.snap()
	calls := h.conns.take()
	unsub := map[string]bool{}
	for _, c := range ops(calls, "unsub") {
		unsub[c.sub] = true
	}
	for _, c := range items[1:] {
		if !unsub[c.sub] {
			t.Errorf("catch-up subscription %s of the same items left open beside the re-request", c.sub)
		}
	}
	_, again := split(calls)
	if len(again) != len(items) {
		t.Fatalf("%d item subscriptions asked again, want %d (every filter of the group)", len(again), len(items))
	}
	for _, c := range again {
		if c.filters[0].Since != nil {
			t.Fatalf("re-request limited to since %d: the gap before it would stay missing", *c.filters[0].Since)
		}
	}
	if r := h.relay(r1); r.ConfirmedEvents != 0 || r.PendingBatches != 1 {
		t.Fatalf("after the failed catch-up the items still count as confirmed: %+v", r)
	}
	h.finish(again)
	if r := h.relay(r1); r.ConfirmedEvents != 3 || r.PendingBatches != 0 {
		t.Fatalf("after the re-request: %+v", r)
	}
	if got := h.counter("grasp_sync_repos_unconfirmed_total", ""); got != 1 {
		t.Fatalf("grasp_sync_repos_unconfirmed_total %v, want 1", got)
	}
}

// A layer 1 closed before it caught up owes its whole range: after a fresh
// (stale) reconnect it asked from full history, so its replacement must
// too, not only the last quick-reconnect window. One closed after its EOSE
// is replaced from the window before now, as before.
func TestG02_Layer1ClosedBeforeCatchingUpIsReplacedFromItsStart(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.Negentropy = true })
	h.initialSync(1)
	l1, _ := h.staleReconnect()
	if len(l1) != 1 || l1[0].filters[0].Since != nil {
		t.Fatalf("stale reconnect layer 1 %+v, want full history", l1)
	}
	h.m.SubscriptionClosed(r1, l1[0].sub, "error: catch-up failed: dial: context canceled")
	h.check()
	l1, _ = split(h.conns.take())
	if len(l1) != 1 || l1[0].filters[0].Since != nil || l1[0].mode != CatchUpNegentropy {
		t.Fatalf("layer 1 replacing one closed before its catch-up %+v, want full history by negentropy", l1)
	}

	h.m.SubscriptionDone(r1, l1[0].sub)
	h.m.SubscriptionClosed(r1, l1[0].sub, "error: shutting down")
	h.check()
	l1, _ = split(h.conns.take())
	want := nostr.Timestamp(h.clk.Now().Add(-15 * time.Minute).Unix())
	if len(l1) != 1 || l1[0].filters[0].Since == nil || *l1[0].filters[0].Since != want {
		t.Fatalf("layer 1 replacing one closed after its catch-up %+v, want since %d", l1, want)
	}
}

// A live item subscription closed after its EOSE (the relay dropped it)
// would miss what arrives from then on: its items are asked for again, but
// from the periodic check, not at once, so a relay that closes every live
// subscription right after its EOSE cannot spin the manager.
func TestG02_LiveItemSubscriptionClosedIsAskedAgainByThePeriodicCheck(t *testing.T) {
	h := newHarness(t, nil)
	_, items := split(h.initialSync(2))
	h.m.SubscriptionClosed(r1, items[0].sub, "error: shutting down")
	h.snap()
	if _, again := split(h.conns.take()); len(again) != 0 {
		t.Fatalf("re-subscribed at once after a live subscription closed: %+v", again)
	}
	if r := h.relay(r1); r.ConfirmedEvents != 0 {
		t.Fatalf("the closed subscription's items still count as confirmed: %+v", r)
	}
	h.check()
	_, again := split(h.conns.take())
	if len(again) != len(items) {
		t.Fatalf("the periodic check asked %d item subscriptions, want %d", len(again), len(items))
	}
	h.finish(again)
	if r := h.relay(r1); r.ConfirmedEvents != 2 {
		t.Fatalf("after the re-request: %+v", r)
	}
}
