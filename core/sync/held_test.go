package sync

import (
	"slices"
	"testing"
)

func TestG02_1_HeldAnnouncementSyncsStateOnlyUntilStored(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Config.Negentropy = true })
	h.m.ObserveHeld(announcement(0, selfURL, r1))
	h.observe(rootEvent(1617, 1, 0))
	h.take1("connect")
	h.m.Connected(r1)
	h.snap()
	l1, items := split(h.conns.take())
	if len(l1) != 1 || l1[0].filters[0].Since != nil || len(items) != 0 {
		t.Fatalf("held repo: layer 1 %+v, %d item subscriptions; want the full announcement stream only", l1, len(items))
	}
	h.check() // a relay serving only a held repository stays
	if c := h.conns.take(); len(c) != 0 {
		t.Fatalf("disconnect check on a held repo's relay: %+v", c)
	}
	// The announcement is released from purgatory and stored: full sync,
	// from scratch, on the connection already open.
	h.observe(announcement(0, selfURL, r1))
	l1, items = split(h.conns.take())
	got := values(t, items)
	slices.Sort(got)
	got = slices.Compact(got)
	if want := []string{hexID(1), repoAddr(0)}; len(l1) != 0 || !slices.Equal(got, want) {
		t.Fatalf("promoted repo subscribed l1=%d values %v, want %v", len(l1), got, want)
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
