package server_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/nbd-wtf/go-nostr"
)

// G03-1 (end to end): a comment on an accepted issue, published only to the
// issue author's NIP-65 write relay — a relay no announcement lists — is
// fetched and served here, through the acceptance pipeline; the relay
// list itself is stored because its author takes part in a hosted
// repository. With outbox off the same relay is never dialled, and NIP-11
// lists GRASP-03 only when it is on.
func TestG03_1_CommentOnlyOnAuthorsWriteRelayIsServed(t *testing.T) {
	for _, outbox := range []bool{true, false} {
		listed := newKhatruPeer(t, khatruOpts{negentropy: true})
		write := newKhatruPeer(t, khatruOpts{negentropy: true})
		e := newSyncEnv(t, func(c *config.Config) { c.Sync.Outbox = outbox })
		cl := e.dial()
		a, b, c := newKey(t), newKey(t), newKey(t)
		w := newWork(t)
		tip := w.commit("one")
		e.release(a, "repo", w, tip, nostr.Tag{"relays", listed.url})

		issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"p", a.PK}, {"subject", "bug"}}, "it breaks")
		relays := e.sign(b, 10002, nostr.Tags{{"r", write.url}}, "")
		comment := e.sign(c, 1111, nostr.Tags{{"E", issue.ID, "", b.PK}, {"K", "1621"}, {"P", b.PK}, {"e", issue.ID, "", b.PK}, {"k", "1621"}, {"p", b.PK}}, "same here")
		write.put(comment)
		cl.mustAccept(issue, "")
		cl.mustAccept(relays, "")

		if !outbox {
			e.eventually("sync idle", syncStep, func() bool {
				return e.relayUp(listed.url) && e.metric("grasp_sync_pending_batches", "") == 0
			})
			if n := write.dials.Load(); n != 0 || cl.served(comment.ID) {
				t.Fatalf("outbox off: the write relay was dialled %d times (comment served: %v)", n, cl.served(comment.ID))
			}
			if slices.Contains(e.grasps(), "GRASP-03") {
				t.Fatalf("outbox off: supported_grasps %v has GRASP-03", e.grasps())
			}
			continue
		}
		e.eventually("the comment from the author's write relay", syncStep, func() bool { return cl.served(comment.ID) })
		if e.metric("grasp_sync_outbox_relays", "") != 1 {
			t.Fatalf("grasp_sync_outbox_relays %v, want 1", e.metric("grasp_sync_outbox_relays", ""))
		}
		if !slices.Contains(e.grasps(), "GRASP-03") {
			t.Fatalf("outbox on: supported_grasps %v lacks GRASP-03", e.grasps())
		}
	}
}

// hostilePeer is an outbox relay that answers every connection with
// garbage, an endless stream of junk EVENTs and then a frame far over the
// peer message limit.
type hostilePeer struct {
	url   string
	dials atomic.Int64
}

func newHostilePeer(t *testing.T) *hostilePeer {
	h := &hostilePeer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		h.dials.Add(1)
		defer c.CloseNow()
		ctx := r.Context()
		_ = c.Write(ctx, websocket.MessageText, []byte(`["EVENT","s-1",{"garbage":}`))
		_ = c.Write(ctx, websocket.MessageText, []byte(`not json at all`))
		junk := []byte(`["EVENT","s-1",{"id":"` + strings.Repeat("0", 64) + `","kind":1111,"content":"x"}]`)
		for i := 0; i < 20000; i++ { // "never-ending", bounded for the test
			if c.Write(ctx, websocket.MessageText, junk) != nil {
				return
			}
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`["EVENT","s-1",{"content":"`+strings.Repeat("x", 8<<20)+`"}]`))
		// then stay open: only the reader's limit ends the connection
		_, _, _ = c.Read(ctx)
	}))
	t.Cleanup(srv.Close)
	h.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return h
}

// G03-5: a participant's hostile write relay (garbage, a junk stream, a
// frame twice the message limit, then silence) is dropped by the reader's
// limit, neither stops outbox sync from the other
// participants' relays nor is dialled without backoff: over ten minutes of
// disconnect checks it is tried a few times, not once a minute or more.
func TestG03_5_HostileOutboxRelayIsBoundedAndBackedOff(t *testing.T) {
	listed := newKhatruPeer(t, khatruOpts{negentropy: true})
	good := newKhatruPeer(t, khatruOpts{negentropy: true})
	bad := newHostilePeer(t)
	e := newSyncEnv(t, nil)
	cl := e.dial()
	a, b, c := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	e.release(a, "repo", w, w.commit("one"), nostr.Tag{"relays", listed.url})

	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"p", c.PK}, {"subject", "bug"}}, "it breaks")
	comment := e.sign(c, 1111, nostr.Tags{{"E", issue.ID, "", b.PK}, {"K", "1621"}, {"P", b.PK}, {"e", issue.ID, "", b.PK}, {"k", "1621"}, {"p", b.PK}}, "same here")
	good.put(comment)
	cl.mustAccept(issue, "")
	cl.mustAccept(e.sign(b, 10002, nostr.Tags{{"r", bad.url}}, ""), "")
	cl.mustAccept(e.sign(c, 10002, nostr.Tags{{"r", good.url}}, ""), "")

	e.eventually("the comment from the good participant's relay", syncStep, func() bool { return cl.served(comment.ID) })
	e.eventually("the hostile relay dialled", syncStep, func() bool { return bad.dials.Load() > 0 })
	start := bad.dials.Load()
	for i := 0; i < 10; i++ {
		e.clk.Advance(time.Minute)
		e.eventually("sync settles", 0, func() bool { return relaySnapshot(e.srv, bad.url).URL != "" })
	}
	// health backoff doubles from 5 s: at most about log2(600/5)+1 tries
	if n := bad.dials.Load() - start; n > 8 {
		t.Fatalf("hostile outbox relay dialled %d times in 10 minutes, want backoff", n)
	}
	e.eventually("the hostile relay dropped after a frame over the limit", 0, func() bool { return !e.relayUp(bad.url) })
}

// G03-12 (part 2, end to end): the issue author's relay list is only on
// the repository's relay and their profile only on a bootstrap relay;
// neither was published here. Sync fetches both for the participant, and
// the relay list is what the outbox lookup reads: a comment only on the
// author's write relay is then served too. Events are counted by where
// they were pulled from.
func TestG03_12_ParticipantProfileAndRelayListSynced(t *testing.T) {
	listed := newKhatruPeer(t, khatruOpts{negentropy: true})
	boot := newKhatruPeer(t, khatruOpts{negentropy: true})
	write := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newSyncEnv(t, func(c *config.Config) { c.Sync.BootstrapRelays = []string{boot.url} })
	cl := e.dial()
	a, b, c := newKey(t), newKey(t), newKey(t)
	w := newWork(t)
	e.release(a, "repo", w, w.commit("one"), nostr.Tag{"relays", listed.url})

	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"p", a.PK}, {"subject", "bug"}}, "it breaks")
	relays := e.sign(b, 10002, nostr.Tags{{"r", write.url}}, "")
	profile := e.sign(b, 0, nil, `{"name":"b"}`)
	comment := e.sign(c, 1111, nostr.Tags{{"E", issue.ID, "", b.PK}, {"K", "1621"}, {"P", b.PK}, {"e", issue.ID, "", b.PK}, {"k", "1621"}, {"p", b.PK}}, "same here")
	listed.put(relays)
	boot.put(profile)
	write.put(comment)
	cl.mustAccept(issue, "")

	e.eventually("the author's relay list from the repository's relay", syncStep, func() bool { return cl.served(relays.ID) })
	e.eventually("the author's profile from the bootstrap relay", syncStep, func() bool { return cl.served(profile.ID) })
	e.eventually("the comment from the author's write relay", syncStep, func() bool { return cl.served(comment.ID) })
	// the counters are bumped after the events are stored (and served):
	// waited for, not read once
	for _, from := range []string{"repo", "bootstrap", "outbox"} {
		e.eventually("grasp_sync_pulled_events_total{from="+from+"} counted", 0, func() bool {
			return e.metric("grasp_sync_pulled_events_total", from) >= 1
		})
	}
	e.eventually("the outbox relay counted connected", syncStep, func() bool {
		return e.metric("grasp_sync_outbox_relays_connected", "") == 1
	})
}

// G03-13: outbox relays pass the same SSRF guard as announced ones: with
// connect_private_addresses off, a participant's write relay on an
// internal address is never dialled, while the repository's relay (here a
// bootstrap relay, always allowed) still brings the relay list.
func TestG03_13_OutboxRelayOnInternalAddressNotDialled(t *testing.T) {
	boot := newKhatruPeer(t, khatruOpts{negentropy: true})
	write := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newSyncEnv(t, func(c *config.Config) {
		c.Sync.ConnectPrivateAddresses = false
		c.Sync.BootstrapRelays = []string{boot.url}
	})
	cl := e.dial()
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	e.release(a, "repo", w, w.commit("one"), nostr.Tag{"relays", boot.url})
	issue := e.sign(b, 1621, nostr.Tags{{"a", repoCoord(a, "repo")}, {"subject", "bug"}}, "it breaks")
	relays := e.sign(b, 10002, nostr.Tags{{"r", write.url}}, "")
	boot.put(relays)
	cl.mustAccept(issue, "")
	e.eventually("the relay list from the bootstrap relay", syncStep, func() bool { return cl.served(relays.ID) })
	e.eventually("the internal outbox relay refused", syncStep, func() bool {
		return e.metric("grasp_sync_outbox_relays", "") == 1 && e.metric("grasp_sync_connection_attempts_total", "failed") >= 1
	})
	if n := write.dials.Load(); n != 0 {
		t.Fatalf("the outbox relay on an internal address was dialled %d times", n)
	}
	if e.relayUp(write.url) {
		t.Fatal("connected to an outbox relay on an internal address")
	}
}
