package relaysync

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// attackerRelays returns n distinct relay URLs an announcer chose.
func attackerRelays(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("wss://attacker-%d.example:%d/p%d", from+i, 1000+i%50000, i)
	}
	return out
}

func connects(calls []call) map[string]bool {
	out := map[string]bool{}
	for _, c := range ops(calls, "connect") {
		out[c.url] = true
	}
	return out
}

var testCaps = Caps{PerRepo: 10, Total: 40, Held: 15}

// Audit F14: one anonymous, never-released announcement listing 1000
// relays made sync dial all 1000 (8000 dials in 17 min). Relays are now
// capped per repository, in total, and for held announcements, and stored
// repositories' relays come before held ones'.
func TestAbuse_F14_AnnouncementsCannotMakeSyncDialUnboundedRelays(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Config.MaxRelaysPerRepo, o.Config.MaxRelays, o.Config.MaxHeldRelays = testCaps.PerRepo, testCaps.Total, testCaps.Held
	})
	// one held announcement listing 1000 relays
	h.m.ObserveHeld(announcement(0, append([]string{selfURL}, attackerRelays(0, 1000)...)...))
	h.observe()
	if got := connects(h.conns.take()); len(got) != testCaps.PerRepo {
		t.Fatalf("one announcement listing 1000 relays: %d dials, want %d", len(got), testCaps.PerRepo)
	}
	// 30 more held announcements, 10 fresh relays each: held-only relays
	// stop at the held cap
	for i := 1; i <= 30; i++ {
		h.m.ObserveHeld(announcement(i, append([]string{selfURL}, attackerRelays(i*1000, 10)...)...))
	}
	h.observe()
	if got := connects(h.conns.take()); len(got) != testCaps.Held-testCaps.PerRepo {
		t.Fatalf("held announcements: %d more dials, want %d (max_held_relays %d in all)", len(got), testCaps.Held-testCaps.PerRepo, testCaps.Held)
	}
	if s := h.snap(); len(s.Relays) != testCaps.Held {
		t.Fatalf("%d relays tracked, want %d", len(s.Relays), testCaps.Held)
	}
	// a stored repository's relay is synced whatever the held flood did
	const legit = "wss://legit.example"
	h.observe(announcement(100, selfURL, legit))
	if got := connects(h.conns.take()); !got[legit] {
		t.Fatalf("the stored repository's relay was not dialled: %v", got)
	}
	// stored announcements flooding relays stop at the total cap, and push
	// held-only relays out first
	for i := 200; i < 260; i++ {
		h.observe(announcement(i, append([]string{selfURL}, attackerRelays(i*1000, 10)...)...))
	}
	h.check()
	h.conns.take()
	s := h.snap()
	if len(s.Relays) > testCaps.Total {
		t.Fatalf("%d relays tracked, want at most max_relays %d", len(s.Relays), testCaps.Total)
	}
	found := false
	for _, r := range s.Relays {
		found = found || r.URL == legit
	}
	if !found {
		t.Fatal("the flood pushed out the relay listed by an earlier stored repository with the same support")
	}
	// the announcers chose every URL: none of them names a metric series
	h.m.Disconnected(legit, errors.New("gone"))
	h.snap()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "example") {
					t.Fatalf("%s is labelled with the announced URL %q", mf.GetName(), l.GetValue())
				}
			}
		}
	}
}

// Bootstrap relays are the operator's: never capped, never counted.
func TestF14_BootstrapRelaysOutsideTheCaps(t *testing.T) {
	x := NewRepoSyncIndex()
	x.SetAnnouncement(repoAddr(0), append([]string{selfURL, "wss://boot.example"}, attackerRelays(0, 30)...), true)
	got, dropped := DeriveRelayTargets(x, TargetRules{Self: []string{selfURL}, Bootstrap: []string{"wss://boot.example"}, Caps: Caps{PerRepo: 5, Total: 3}})
	if len(got) != 4 || !got["wss://boot.example"].Bootstrap || len(got["wss://boot.example"].Repos) != 1 {
		t.Fatalf("targets %v", keys(got))
	}
	// per repo: boot + 4 attacker relays; total keeps 3 of those 4
	if dropped != 1 {
		t.Fatalf("dropped %d, want 1", dropped)
	}
	for u := range got {
		if u != "wss://boot.example" && !strings.Contains(u, "attacker-") {
			t.Fatalf("unexpected target %s", u)
		}
	}
}
