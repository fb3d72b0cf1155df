package server_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip86"
)

// op86 calls a NIP-86 method on e as the operator key op.
func (e *testServer) op86(op key, method string, params ...any) json.RawMessage {
	e.t.Helper()
	res, err := nip86.Call(context.Background(), nil, e.ws, op.SK, method, params...)
	if err != nil {
		e.t.Fatalf("NIP-86 %s %v: %v", method, params, err)
	}
	return res
}

// op86Here is op86 as a load balancer delivers it to e, one instance of
// several: the token names the public URL, the request reaches e's own
// listener.
func (e *testServer) op86Here(op key, method string, params ...any) json.RawMessage {
	e.t.Helper()
	addr := strings.TrimPrefix(e.base, "http://")
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	res, err := nip86.Call(context.Background(), &http.Client{Transport: tr}, e.cfg.RelayURL(), op.SK, method, params...)
	if err != nil {
		e.t.Fatalf("NIP-86 %s %v on %s: %v", method, params, addr, err)
	}
	return res
}

// authedAs opens a connection authenticated (NIP-42) as k on a public
// server: a private announcement's refusal brings the challenge.
func (e *testServer) authedAs(k key) *client {
	e.t.Helper()
	cl := e.dial()
	cl.send("EVENT", e.sign(k, 30617, nostr.Tags{{"d", "auth-probe"}, {"private", "true"},
		{"clone", e.cloneURL(k, "auth-probe")}, {"relays", e.ws}}, ""))
	m := cl.next(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	auth := nip42.CreateUnsignedAuthEvent(str(m[1]), k.PK, e.cfg.RelayURL()) // the public URL (an instance behind a balancer has its own listener)
	if err := auth.Sign(k.SK); err != nil {
		e.t.Fatal(err)
	}
	cl.send("AUTH", auth)
	ok := cl.next(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m[1]) == auth.ID })
	var b bool
	json.Unmarshal(ok[2], &b)
	if !b {
		e.t.Fatalf("AUTH refused: %s", ok[3])
	}
	return cl
}

// subscribe opens subscription id on cl and waits for its EOSE.
func (cl *client) subscribe(id string, f nostr.Filter) {
	cl.t.Helper()
	cl.send("REQ", id, f)
	cl.next(func(m []json.RawMessage) bool { return label(m) == "EOSE" && str(m[1]) == id })
}

// closedWith waits for CLOSED on subscription id and returns its reason.
func (cl *client) closedWith(id string) string {
	cl.t.Helper()
	m := cl.next(func(m []json.RawMessage) bool { return label(m) == "CLOSED" && str(m[1]) == id })
	return str(m[2])
}

// Issue 25 part 3, end to end on one instance: the operator (relay.pubkey)
// bans a key over NIP-86; the key's open subscription is CLOSED at once
// with "blocked:", its held announcement leaves purgatory, its events are
// refused, and an unban lets them in again. The relay name changes in
// NIP-11 at once; an address block refuses every path and ends open
// connections, and the NIP-86 endpoint stays reachable to lift it.
func TestNIP86_LiveBanNameAndBlockOnOneInstance(t *testing.T) {
	op := newKey(t)
	e := newEnv(t, func(c *config.Config) { c.Relay.Pubkey = op.PK })
	b := newKey(t)
	cl := e.authedAs(b)
	cl.subscribe("mine", nostr.Filter{Kinds: []int{1621}})
	held := e.announcement(b, "held")
	cl.mustAccept(held, purg)
	if !e.held(held.ID) {
		t.Fatal("control: B's announcement is not held")
	}

	e.op86(op, "banpubkey", b.PK, "spam")
	if why := cl.closedWith("mine"); !strings.HasPrefix(why, "blocked:") {
		t.Fatalf("B's subscription closed with %q, want blocked:", why)
	}
	e.eventually("B's held announcement leaves purgatory", 0, func() bool { return !e.held(held.ID) })
	other := e.dial()
	other.mustReject(e.announcement(b, "again"), "blocked:")
	var banned []map[string]string
	json.Unmarshal(e.op86(op, "listbannedpubkeys"), &banned)
	if len(banned) != 1 || banned[0]["pubkey"] != b.PK || banned[0]["reason"] != "spam" {
		t.Fatalf("listbannedpubkeys = %v", banned)
	}
	e.op86(op, "unbanpubkey", b.PK)
	other.mustAccept(e.announcement(b, "again"), purg)

	// NIP-11 follows the name at once.
	e.op86(op, "changerelayname", "The Forge")
	var doc struct{ Name string }
	e.nip11Into(&doc)
	if doc.Name != "The Forge" {
		t.Fatalf("NIP-11 name = %q after changerelayname", doc.Name)
	}

	// An address block: every path refused, open connections end; the
	// endpoint itself lifts it.
	watcher := e.dial()
	watcher.subscribe("w", nostr.Filter{Kinds: []int{1}})
	e.op86(op, "blockip", "127.0.0.1", "test")
	if why := watcher.closedWith("w"); !strings.HasPrefix(why, "blocked:") {
		t.Fatalf("a blocked address's subscription closed with %q", why)
	}
	if status, _, _ := httpGet(t, e.base+"/", "Accept", "application/nostr+json"); status != http.StatusForbidden {
		t.Fatalf("NIP-11 from a blocked address: %d, want 403", status)
	}
	e.op86(op, "unblockip", "127.0.0.1")
	if status, _, _ := httpGet(t, e.base+"/", "Accept", "application/nostr+json"); status != http.StatusOK {
		t.Fatalf("NIP-11 after unblockip: %d", status)
	}

	// Someone else's key is not the operator's.
	if _, err := nip86.Call(context.Background(), nil, e.ws, b.SK, "banpubkey", op.PK); err == nil || !strings.HasPrefix(err.Error(), "restricted:") {
		t.Fatalf("a non-operator's call: %v", err)
	}
}

// Issue 25 part 3 on PostgreSQL: a ban made through instance A closes the
// banned key's open subscription on instance B at once and refuses its
// events there; the lists are one for both (and for a restart).
func TestNIP86_BanThroughAClosesSubscriptionOnB(t *testing.T) {
	op := newKey(t)
	in := newInstances(t, 2, func(c *config.Config) { c.Relay.Pubkey = op.PK })
	a, b := in[0], in[1]
	x := newKey(t)
	cl := b.authedAs(x)
	cl.subscribe("x", nostr.Filter{Kinds: []int{1621}})

	a.op86(op, "banpubkey", x.PK, "through A")
	if why := cl.closedWith("x"); !strings.HasPrefix(why, "blocked:") {
		t.Fatalf("X's subscription on B closed with %q, want blocked:", why)
	}
	b.dial().mustReject(b.announcement(x, "repo"), "blocked:")
	var banned []struct{ Pubkey, Reason string }
	if err := json.Unmarshal(b.op86Here(op, "listbannedpubkeys"), &banned); err != nil || len(banned) != 1 || banned[0].Pubkey != x.PK || banned[0].Reason != "through A" {
		t.Fatalf("B's list: %+v (%v), want %s banned \"through A\"", banned, err, x.PK)
	}
}
