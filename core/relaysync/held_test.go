package relaysync

import (
	"slices"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

func TestG02_1_HeldAnnouncementSyncsStateOnlyUntilStored(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.Negentropy = true })
	h.m.ObserveHeld(announcement(0, selfURL, r1))
	h.observe(rootEvent(1617, 1, 0))
	h.take1("connect")
	h.m.Connected(r1)
	h.snap()
	l1, items := split(h.conns.take())
	if len(l1) != 1 || l1[0].filters[0].Since != nil || len(items) != 0 || !heldOnly(l1[0].filters[0], "repo0") {
		t.Fatalf("held repo: layer 1 %+v, %d item subscriptions; want its own announcements and states, full history, only", l1, len(items))
	}
	heldL1 := l1[0].sub
	h.check() // a relay serving only a held repository stays
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("disconnect check on a held repo's relay: %+v", c)
	}
	// The announcement is released from purgatory and stored: full sync,
	// from scratch, on the connection already open.
	h.observe(announcement(0, selfURL, r1))
	calls := h.conns.take()
	l1, items = split(calls)
	got := values(t, items)
	slices.Sort(got)
	got = slices.Compact(got)
	if want := []string{hexID(1), repoAddr(0)}; !slices.Equal(got, want) {
		t.Fatalf("promoted repo subscribed values %v, want %v", got, want)
	}
	// and the relay of a stored repository is asked for discovery now
	if len(l1) != 1 || !slices.Equal(l1[0].filters[0].Kinds, AnnouncementKinds) || len(l1[0].filters[0].Tags) != 0 || l1[0].filters[0].Since != nil {
		t.Fatalf("promoted repo's relay: layer 1 %+v, want discovery from full history", l1)
	}
	if un := ops(calls, "unsub"); len(un) != 1 || un[0].sub != heldL1 {
		t.Fatalf("promoted repo's relay: unsubscribed %+v, want the held-only layer 1 %s", un, heldL1)
	}
	for _, c := range items {
		if c.filters[0].Since != nil || c.mode != CatchUpNegentropy {
			t.Fatalf("promotion without full history: %+v", c)
		}
	}
	// A later held observation (say, the register loop catching up) does
	// not demote it.
	h.m.ObserveHeld(announcement(0, selfURL, r2))
	h.observe()
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("held observation of a stored repo acted: %+v", c)
	}
	h.finish(items)
	if r := h.relay(r1); r.ConfirmedRepos != 1 || r.ConfirmedEvents != 1 {
		t.Fatalf("promoted repo not confirmed: %+v", r)
	}
}

func TestG02_HeldAnnouncementForgottenOnExpiry(t *testing.T) {
	h := newHarness(t, nil)
	h.m.ObserveHeld(announcement(0, selfURL, r1))
	h.m.ObserveHeld(rootEvent(1617, 1, 0)) // not an announcement: ignored
	h.observe()
	h.take1("connect")
	h.m.Connected(r1)
	h.snap()
	h.conns.take()
	if s := h.snap(); s.Repos != 1 || s.RootEvents != 0 {
		t.Fatalf("index %+v", s)
	}
	h.forget(repoAddr(0))
	h.check()
	if c := h.conns.take(); len(c) != 1 || c[0].op != "close" || c[0].url != r1 {
		t.Fatalf("after the held announcement expired: %+v, want close r1", c)
	}
	if s := h.snap(); s.Repos != 0 || len(s.Relays) != 0 {
		t.Fatalf("after expiry %+v", s)
	}
}

func TestG02_6_DeriveRelayTargetsCountsHeldRepos(t *testing.T) {
	x := NewRepoSyncIndex()
	x.SetAnnouncement(repoAddr(0), []string{selfURL, "wss://a.example"}, true)
	if _, ok := x.HoldAnnouncement(repoAddr(1), []string{selfURL, "wss://a.example", "wss://b.example"}, true); !ok {
		t.Fatal("held announcement not recorded")
	}
	if _, ok := x.HoldAnnouncement(repoAddr(0), []string{"wss://c.example"}, true); ok {
		t.Fatal("held announcement replaced a stored one")
	}
	got, _ := DeriveRelayTargets(x, TargetRules{Self: []string{selfURL}})
	if a := got["wss://a.example"]; len(a.Repos) != 1 || a.Repos[0] != 0 || a.Held != 1 {
		t.Fatalf("a: %+v", a)
	}
	if b := got["wss://b.example"]; len(b.Repos) != 0 || b.Held != 1 {
		t.Fatalf("b: %+v", b)
	}
	if _, ok := got["wss://c.example"]; ok {
		t.Fatal("stored repo took the held announcement's relays")
	}
	id1, _ := x.Lookup(repoAddr(1))
	x.SetAnnouncement(repoAddr(1), []string{selfURL, "wss://b.example"}, true) // stored: promoted
	if x.Held(id1) {
		t.Fatal("stored announcement did not promote")
	}
	got, _ = DeriveRelayTargets(x, TargetRules{Self: []string{selfURL}})
	if b := got["wss://b.example"]; len(b.Repos) != 1 || b.Held != 0 {
		t.Fatalf("b after promotion: %+v", b)
	}
	if _, ok := got["wss://a.example"]; !ok || got["wss://a.example"].Held != 0 {
		t.Fatalf("a after promotion: %+v", got["wss://a.example"])
	}
}

// heldOnly reports whether f is the layer 1 of a relay connected only for
// held repositories: their announcements and states by identifier, no
// discovery (F26).
func heldOnly(f nostr.Filter, ds ...string) bool {
	return slices.Equal(f.Kinds, []int{30617, 30618}) && len(f.Tags) == 1 && slices.Equal(f.Tags["d"], ds) && len(f.Authors) == 0
}

// F26: sync asked every connected relay for all kind 30617, those of held
// announcements too, so one announcement naming an attacker's relay
// pulled in that relay's whole stock. A relay connected only for held
// announcements is asked for their identifiers' announcements and states;
// its layer 1 follows the held set, and discovery starts only once a
// stored repository lists it.
func TestAbuse_F26_NoDiscoveryFromRelaysOfHeldAnnouncements(t *testing.T) {
	h := newHarness(t, nil)
	h.m.ObserveHeld(announcement(0, selfURL, r1))
	h.m.ObserveHeld(announcement(1, selfURL, r1))
	h.observe()
	h.take1("connect")
	h.m.Connected(r1)
	h.snap()
	l1, _ := split(h.conns.take())
	if len(l1) != 1 || !heldOnly(l1[0].filters[0], "repo0", "repo1") {
		t.Fatalf("relay of two held announcements: layer 1 %+v, want their identifiers only", l1)
	}
	// one of them expires: the other's identifier only
	h.forget(repoAddr(0))
	calls := h.conns.take()
	l1, _ = split(calls)
	if len(l1) != 1 || !heldOnly(l1[0].filters[0], "repo1") || len(ops(calls, "unsub")) != 1 {
		t.Fatalf("after one held announcement expired: %+v", calls)
	}
	// a stored repository lists the relay: discovery
	h.observe(announcement(2, selfURL, r1))
	l1, _ = split(h.conns.take())
	if len(l1) != 1 || !slices.Equal(l1[0].filters[0].Kinds, AnnouncementKinds) || len(l1[0].filters[0].Tags) != 0 {
		t.Fatalf("relay of a stored repository: layer 1 %+v, want discovery", l1)
	}
}
