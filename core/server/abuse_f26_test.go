package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/nbd-wtf/go-nostr"
)

// filterLog records the filters a peer is asked for.
type filterLog struct {
	mu sync.Mutex
	fs []nostr.Filter
}

func (l *filterLog) watch(u *khatruPeer) {
	u.rl.RejectFilter = append(u.rl.RejectFilter, func(_ context.Context, f nostr.Filter) (bool, string) {
		l.mu.Lock()
		l.fs = append(l.fs, f)
		l.mu.Unlock()
		return false, ""
	})
}

// discovery returns the filters that asked for announcements of every
// identifier (GRASP-02 layer 1's discovery).
func (l *filterLog) discovery() []nostr.Filter {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []nostr.Filter
	for _, f := range l.fs {
		if slices.Contains(f.Kinds, 30617) && len(f.Tags["d"]) == 0 && len(f.Authors) == 0 {
			out = append(out, f)
		}
	}
	return out
}

// F26: synced announcements carried no client address, so no per-IP cap
// applied to them, and sync asked every connected relay for all kind
// 30617, those of held announcements too: one client announcement naming
// the attacker's relay pulled in enough announcements to fill the
// relay-wide cap, and newcomers were refused. The operator now sees a
// relay connected for a held announcement asked for that repository's
// announcements and states only, and a relay of a stored repository, which
// is asked for discovery, held to its per-relay caps: a newcomer's
// announcement is accepted throughout.
func TestAbuse_F26_SyncedAnnouncementsBoundedPerRelay(t *testing.T) {
	e := newSyncEnv(t, func(c *config.Config) {
		c.Purgatory.MaxHeldAnnouncements = 30
		c.Purgatory.MaxHeldAnnouncementsPerRelay = 5
	})
	peer := newKhatruPeer(t, khatruOpts{})
	var asked filterLog
	asked.watch(peer)
	// what the attacker's relay offers: 40 announcements listing this
	// server, each of which would wait here with a bare repository
	for i := 0; i < 40; i++ {
		peer.put(e.announcement(newKey(t), fmt.Sprint("flood", i)))
	}
	a := newKey(t)
	w := newWork(t)
	x := w.commit("x")
	ann := e.sign(a, 30617, nostr.Tags{{"d", "bait"}, {"clone", e.cloneURL(a, "bait")}, {"relays", e.ws, peer.url}}, "")
	st := e.state(a, "bait", map[string]string{"refs/heads/main": x}, "refs/heads/main")
	peer.put(st) // found on its relay, as an archived repository's would be

	cl := e.dial()
	cl.mustAccept(ann, purg)
	// the held announcement's relay is synced for that repository only
	e.eventually("the held repository's state synced from its relay", syncStep, func() bool {
		_, ok := e.srv.Purgatory().Get(st.ID)
		return ok
	})
	if d := asked.discovery(); len(d) != 0 {
		t.Fatalf("a relay connected only for a held announcement was asked for discovery: %+v", d)
	}
	if n := e.metric("grasp_purgatory_entries", "30617"); n != 1 {
		t.Fatalf("%v announcements held after the held announcement's relay was synced, want its own only", n)
	}

	// released by its push, the repository's relay is asked for
	// discovery, and what it brings in waits within its relay's cap
	if out, err := w.push(e.cloneURL(a, "bait"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	e.eventually("the 40 announcements discovered", syncStep, func() bool {
		// the state before, then all 40, held or refused
		return len(asked.discovery()) > 0 && e.metric("grasp_sync_pulled_events_total", "rejected")+e.metric("grasp_sync_pulled_events_total", "held") >= 41
	})
	if n := e.metric("grasp_purgatory_entries", "30617"); n != 5 {
		t.Fatalf("%v announcements held from one relay, want its cap of 5", n)
	}
	newcomer := newKey(t)
	cl = e.dial()
	cl.mustAccept(e.announcement(newcomer, "mine"), purg)
	if n := e.metric("grasp_purgatory_events_total", "refused"); n < 35 {
		t.Fatalf("%v refusals counted, want the 35 announcements past the relay's cap", n)
	}
}
