package server_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// countServed counts the ids e serves, asking in chunks under the REQ cap.
func countServed(cl *client, ids []string) int {
	n := 0
	for start := 0; start < len(ids); start += 100 {
		n += len(cl.query(nostr.Filter{IDs: ids[start:min(start+100, len(ids))]}))
	}
	return n
}

func repoCoord(k key, d string) string { return "30617:" + k.PK + ":" + d }

// servedAll reports whether every id is served by e.
func servedAll(cl *client, ids ...string) bool {
	return len(cl.query(nostr.Filter{IDs: ids})) == len(ids)
}

// G02-1 (events part) and G02-7: the announcement, once accepted here,
// makes the server fetch from the relay it lists: a newer state, an issue,
// a comment on the issue (layer 3, found only after the issue is in), and
// events quoting or tagging the repo with q and A (layer 2). An
// announcement on the same relay that does not list this server is neither
// accepted nor followed: the relay only it lists is never contacted.
func TestG02_1_G02_7_HistoricSyncFromListedRelay(t *testing.T) {
	u := newKhatruPeer(t, khatruOpts{negentropy: true})
	elsewhere := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newSyncEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	c1 := w.commit("one")

	ann := e.announcement(a, "repo", nostr.Tag{"relays", u.url})
	st2 := e.sign(a, 30618, nostr.Tags{{"d", "repo"}, {"refs/heads/main", c1}, {"refs/tags/v1", c1}, {"HEAD", "ref: refs/heads/main"}}, "")
	st2.CreatedAt += 5
	st2.Sign(a.SK)
	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"p", a.PK}, {"subject", "bug"}}, "it breaks")
	comment := e.sign(a, 1111, nostr.Tags{{"E", issue.ID, "", b.PK}, {"K", "1621"}, {"P", b.PK}, {"e", issue.ID, "", b.PK}, {"k", "1621"}, {"p", b.PK}}, "thanks")
	quote := e.sign(b, 1, nostr.Tags{{"q", repoCoord(a, "repo")}}, "look at this repo")
	upper := e.sign(b, 1111, nostr.Tags{{"A", repoCoord(a, "repo")}, {"K", "30617"}, {"P", a.PK}, {"a", repoCoord(a, "repo")}, {"k", "30617"}, {"p", a.PK}}, "nice repo")
	// B's repository lists only other relays, not this server
	foreign := e.sign(b, 30617, nostr.Tags{{"d", "theirs"}, {"clone", "http://example.com/" + b.Npub + "/theirs.git"}, {"relays", u.url, elsewhere.url}}, "")
	foreignIssue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(b, "theirs")}}, "not ours")
	u.put(ann, st2, issue, comment, quote, upper, foreign, foreignIssue)

	e.release(a, "repo", w, c1, nostr.Tag{"relays", u.url})
	e.eventually("the listed relay's history", syncStep, func() bool {
		return servedAll(cl, st2.ID, issue.ID, comment.ID, quote.ID, upper.ID)
	})
	// one more round of batches so anything the foreign announcement would
	// trigger has had its chance
	e.eventually("sync idle", syncStep, func() bool { return e.metric("grasp_sync_pending_batches", "") == 0 })
	e.clk.Advance(time.Second)
	if cl.served(foreign.ID) || cl.served(foreignIssue.ID) {
		t.Fatal("G02-7: an announcement not listing this server (or its issue) was synced")
	}
	if n := elsewhere.dials.Load(); n != 0 {
		t.Fatalf("G02-7: dialled a relay only a non-listing announcement names (%d times)", n)
	}
	if e.metric("grasp_sync_events_total", "catchup") == 0 {
		t.Fatal("no events counted as catch-up")
	}
}

// G02-5: a relay without NIP-77 that caps every REQ at 500 results still
// yields its whole history, through REQ paging with until. (Notes tagging
// the repo, not issues: each issue would be a root event with layer 3
// subscriptions of its own, which is not what this test is about.)
func TestG02_5_NegentropyFallbackPagesPastTheRelayCap(t *testing.T) {
	u := newKhatruPeer(t, khatruOpts{negentropy: false, reqCap: 500})
	e := newSyncEnv(t, func(c *config.Config) { c.Sync.Negentropy = true })
	cl := e.dial()
	a := newKey(t)
	w := newWork(t)
	c1 := w.commit("one")
	const n = 1100
	ids := make([]string, 0, n)
	base := e.clk.Now().Add(-time.Hour)
	for i := 0; i < n; i++ {
		evt := &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(base.Add(time.Duration(i/3) * time.Second).Unix()),
			Tags: nostr.Tags{{"a", repoCoord(a, "repo")}}, Content: fmt.Sprintf("note %d", i)}
		if err := evt.Sign(a.SK); err != nil {
			t.Fatal(err)
		}
		u.put(evt)
		ids = append(ids, evt.ID)
	}
	e.release(a, "repo", w, c1, nostr.Tag{"relays", u.url})
	// Fake time passes only until the peer answers the first REQ page: the
	// batch window that starts the sync fires, and the NIP-77 attempt the
	// peer never answers times out into the REQ fallback; from then on the
	// paging is real work alone (no pause between pages), and no round
	// timeout may run ahead of a page that takes long to arrive and be
	// stored on a loaded machine (it did: 5 minutes of retries).
	got, before := 0, -1
	testwait.Stepping(t, "all capped history", func() {
		if got == before && u.reqs.Load() == 0 {
			e.clk.Advance(syncStep)
		}
		before = got
	}, func() bool {
		got = countServed(cl, ids)
		return got == n
	})
}

// G02-2 and G02-6 against a second instance of this server: the
// announcement names a relay this server did not know (discovery); once
// connected, an issue (layer 2, `a`) and then a comment on it (layer 3,
// `E`) published only there arrive without a reconnect and without any
// timer firing here: the live subscriptions carry them.
func TestG02_2_G02_6_LiveSyncOfLayers2And3FromADiscoveredRelay(t *testing.T) {
	e := newSyncEnv(t, nil)
	peer := newSyncEnv(t, func(c *config.Config) { c.Sync.Enabled = false })
	cl, pcl := e.dial(), peer.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	c1 := w.commit("one")
	both := []nostr.Tag{{"clone", peer.cloneURL(a, "repo")}, {"relays", peer.ws}}
	peer.release(a, "repo", w, c1, nostr.Tag{"clone", e.cloneURL(a, "repo")}, nostr.Tag{"relays", e.ws})
	if e.relayUp(peer.ws) {
		t.Fatal("connected to the peer before any announcement named it")
	}
	e.release(a, "repo", w, c1, both...)
	e.eventually("G02-6: connection to the relay the announcement lists", syncStep, func() bool {
		return e.relayUp(peer.ws) && e.metric("grasp_sync_pending_batches", "") == 0 &&
			e.relayFilters(peer.ws) >= 4
	})

	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"p", a.PK}}, "live issue")
	pcl.mustAccept(issue, "")
	e.eventually("live issue", 0, func() bool { return cl.served(issue.ID) })

	// the issue is a new root event: layer 3 for it opens after a batch
	e.eventually("layer 3 subscription for the issue", syncStep, func() bool {
		return e.relayFilters(peer.ws) >= 7 && e.metric("grasp_sync_pending_batches", "") == 0
	})
	comment := e.sign(a, 1111, nostr.Tags{{"E", issue.ID, "", b.PK}, {"K", "1621"}, {"P", b.PK}, {"e", issue.ID}, {"k", "1621"}, {"p", b.PK}}, "on it")
	pcl.mustAccept(comment, "")
	quote := e.sign(b, 1, nostr.Tags{{"q", issue.ID}}, "see this issue")
	pcl.mustAccept(quote, "")
	e.eventually("live comment and quote", 0, func() bool { return servedAll(cl, comment.ID, quote.ID) })
	// No timer fired, so only the open subscriptions can have brought
	// them; a catch-up of a subscription opened meanwhile may win the race
	// for one of them, so the live count is checked, not pinned.
	live, caught := e.metric("grasp_sync_events_total", "live"), e.metric("grasp_sync_events_total", "catchup")
	if live < 1 || live+caught < 3 {
		t.Fatalf("events counted: live %v, catch-up %v; want at least 3, some live", live, caught)
	}
}

// The 15-minute rule end to end: events published while the relay was
// unreachable arrive after a reconnect within the window (catch-up from
// just before the gap) and after one beyond it (fresh sync).
func TestG02_ReconnectWithinAndAfter15MinutesLosesNothing(t *testing.T) {
	u := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newSyncEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	c1 := w.commit("one")
	first := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}}, "before")
	u.put(e.announcement(a, "repo", nostr.Tag{"relays", u.url}), first)
	e.release(a, "repo", w, c1, nostr.Tag{"relays", u.url})
	connected := func() bool {
		return e.relayUp(u.url) && e.metric("grasp_sync_pending_batches", "") == 0
	}
	e.eventually("initial sync", syncStep, func() bool { return connected() && cl.served(first.ID) })

	for _, gap := range []time.Duration{10 * time.Second, 20 * time.Minute} {
		u.drop()
		e.eventually("the drop noticed", 0, func() bool { return !e.relayUp(u.url) })
		missed := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}}, "while away "+gap.String())
		u.put(missed)
		// the peer stays down through the gap: had it come back first, the
		// reconnect could land before the jump (a quick reconnect after a
		// "20 minute" gap) and the jump would time out its catch-up midway
		e.clk.Advance(gap)
		u.up()
		// a fresh client: the advance may have timed out idle connections
		cl = e.dial()
		e.eventually("reconnect after "+gap.String(), syncStep, func() bool { return connected() && cl.served(missed.ID) })
	}
	if e.metric("grasp_sync_connection_attempts_total", "lost") < 2 {
		t.Fatal("the drops were not seen as lost connections")
	}
}

// G02-9 and cfg.Sync.Enabled: GRASP-02 is advertised only when sync runs,
// and with sync off nothing of it is built.
func TestG02_9_SupportedGraspsFollowsSyncSwitch(t *testing.T) {
	grasps := func(e *testServer) []string { return e.grasps() }
	on := newSyncEnv(t, nil)
	if !slices.Contains(grasps(on), "GRASP-02") {
		t.Fatalf("sync on: supported_grasps %v lacks GRASP-02", grasps(on))
	}
	off := newSyncEnv(t, func(c *config.Config) { c.Sync.Enabled = false })
	if slices.Contains(grasps(off), "GRASP-02") {
		t.Fatalf("sync off: supported_grasps %v has GRASP-02", grasps(off))
	}
	if off.hasMetric("grasp_sync_relays_tracked") {
		t.Fatal("sync off, yet the sync manager was built")
	}
}

// G02-1, the held half: an announcement still in purgatory (no git data
// yet) is already followed, so what its relays hold arrives; an issue
// found there waits in purgatory with the repository and is served once
// the first push releases both.
func TestG02_1_HeldAnnouncementIsSyncedFromItsRelays(t *testing.T) {
	u := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newSyncEnv(t, nil)
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	c1 := w.commit("one")
	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}}, "found upstream")
	u.put(issue)
	cl.mustAccept(e.announcement(a, "repo", nostr.Tag{"relays", u.url}), purg)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": c1}, "refs/heads/main"), purg)
	// a held repo is synced at the state-only level (the seed's StateOnly):
	// its relay is connected for announcements and states, its issues wait
	e.eventually("sync of the held repository's relay", syncStep, func() bool {
		return e.relayUp(u.url) && e.metric("grasp_sync_pending_batches", "") == 0
	})
	if cl.served(issue.ID) {
		t.Fatal("issue of a held repository served before the repository")
	}
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	// stored now: full sync of the repo brings its history
	e.eventually("the issue synced once the repository is served", syncStep, func() bool { return cl.served(issue.ID) })
}

// A repo whose held announcement expires is no longer synced: the manager
// forgets it and the disconnect check closes the relay only it used. (The
// TTL is far beyond what the first wait advances, however slowly the
// machine connects; the test then jumps past it.)
func TestG02_ExpiredRepoIsNoLongerSynced(t *testing.T) {
	const ttl = time.Hour
	e := newSyncEnv(t, func(c *config.Config) {
		c.Purgatory.TTL = config.Duration(ttl)
		c.Purgatory.SweepInterval = config.Duration(time.Second)
		c.Sync.DisconnectCheckInterval = config.Duration(time.Second)
	})
	peer := newSyncEnv(t, func(c *config.Config) { c.Sync.Enabled = false })
	cl := e.dial()
	a := newKey(t)
	cl.mustAccept(e.announcement(a, "repo", nostr.Tag{"relays", peer.ws}), purg)
	e.eventually("sync of the held repo's relay", 200*time.Millisecond, func() bool {
		return e.relayUp(peer.ws)
	})
	// past the TTL: the announcement expires, sync forgets the repo
	e.clk.Advance(ttl)
	e.eventually("the relay only the expired repo used is closed", time.Second, func() bool {
		return !e.relayUp(peer.ws) && e.srv.Purgatory().Len() == 0
	})
}

// Relay URLs come from anyone's announcements: by default sync does not
// connect to internal addresses, but the operator's bootstrap relays are
// always dialled.
func TestG02_SyncRefusesInternalRelaysButNotBootstrap(t *testing.T) {
	peer := newSyncEnv(t, func(c *config.Config) { c.Sync.Enabled = false })
	boot := newSyncEnv(t, func(c *config.Config) { c.Sync.Enabled = false })
	e := newSyncEnv(t, func(c *config.Config) {
		c.Sync.ConnectPrivateAddresses = false
		c.Sync.BootstrapRelays = []string{boot.ws}
	})
	cl := e.dial()
	a := newKey(t)
	cl.mustAccept(e.announcement(a, "repo", nostr.Tag{"relays", peer.ws}), purg)
	e.eventually("the bootstrap relay connected and the announced one refused", 200*time.Millisecond, func() bool {
		return e.metric("grasp_sync_relay_connected", boot.ws) == 1 &&
			e.metric("grasp_sync_connection_attempts_total", "failed") >= 1
	})
	if e.relayUp(peer.ws) {
		t.Fatal("connected to a relay on an internal address")
	}
	if n := peer.metric("grasp_gate_connections_total", ""); n != 0 {
		t.Fatalf("the internal relay saw %v connections", n)
	}
}

// A stored repo that is deleted (forgotten by sync) and announced again is
// synced again in full: its root events stored before are replayed to the
// manager, so comments on an old issue are fetched (layer 3).
func TestG02_ReturningRepoGetsItsRootEventsBack(t *testing.T) {
	u := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newSyncEnv(t, func(c *config.Config) { c.Sync.DisconnectCheckInterval = config.Duration(time.Second) })
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	c1 := w.commit("one")
	e.release(a, "repo", w, c1, nostr.Tag{"relays", u.url})
	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}}, "old issue")
	cl.mustAccept(issue, "")
	e.eventually("layer 3 for the issue", syncStep, func() bool {
		return e.relayUp(u.url) && e.metric("grasp_sync_pending_batches", "") == 0 &&
			e.relayFilters(u.url) >= 7
	})
	// the author deletes the announcement: sync forgets the repo
	e.clk.Advance(time.Second)
	cl.mustAccept(e.sign(a, 5, nostr.Tags{{"a", repoCoord(a, "repo")}}, ""), "")
	e.eventually("the forgotten repo's relay closed", 500*time.Millisecond, func() bool {
		return !e.relayUp(u.url)
	})
	// a comment on the old issue appears upstream while the repo is gone
	comment := e.sign(b, 1111, nostr.Tags{{"E", issue.ID, "", b.PK}, {"K", "1621"}, {"P", b.PK}}, "still broken")
	u.put(comment)
	// announced again, with new data pushed: stored, and synced in full
	e.clk.Advance(time.Second)
	c2 := w.commit("two")
	cl = e.dial()
	e.release(a, "repo", w, c2, nostr.Tag{"relays", u.url})
	e.eventually("the returning repo synced in full again", syncStep, func() bool {
		return e.relayUp(u.url) && e.metric("grasp_sync_pending_batches", "") == 0 &&
			e.relayFilters(u.url) >= 7
	})
	e.eventually("the comment on the old issue, via its replayed layer 3", syncStep, func() bool { return cl.served(comment.ID) })
}

// grasps is the supported_grasps of e's NIP-11 document.
func (e *testServer) grasps() []string {
	e.t.Helper()
	var doc struct {
		Grasps []string `json:"supported_grasps"`
	}
	e.nip11Into(&doc)
	return doc.Grasps
}
