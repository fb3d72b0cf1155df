package gate

import (
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// NIP-42: a connection's challenge is sent when an answer first asks the
// client to authenticate ("auth-required:"), or on connect while anything
// is private (private.go), and an AUTH event signed over it and this
// relay's URL authenticates the connection as its author.

// authWindow is how far an AUTH event's created_at may be from now (NIP-42
// suggests "about 10 minutes").
const authWindow = 10 * time.Minute

func (c *conn) requestAuth() {
	if challenge, fresh := c.authChallenge(); fresh {
		c.send(appendEnvelope(nil, "AUTH", challenge))
	}
}

func (c *conn) handleAuth(f *frame, b []byte) bool {
	if f.n != 2 || f.kindOf(b, 1) != '{' {
		c.g.metrics.limit("malformed")
		return c.notice(`invalid: AUTH takes exactly one event object`)
	}
	var evt nostr.Event
	if err := evt.UnmarshalJSON(b[f.elems[1].start:f.elems[1].end]); err != nil {
		c.g.metrics.limit("malformed")
		return c.notice("invalid: could not parse event: " + err.Error())
	}
	c.authMu.Lock()
	challenge := c.challenge
	c.authMu.Unlock()
	if challenge == "" {
		return c.send(appendOK(evt.ID, false, "invalid: no authentication was requested on this connection"))
	}
	if !evt.CheckID() {
		return c.send(appendOK(evt.ID, false, "invalid: id is computed incorrectly"))
	}
	if reason := c.checkAuthEvent(&evt, challenge); reason != "" {
		return c.send(appendOK(evt.ID, false, "invalid: "+reason))
	}
	c.authMu.Lock()
	c.authed = evt.PubKey
	c.authMu.Unlock()
	return c.send(appendOK(evt.ID, true, ""))
}

// checkAuthEvent is NIP-42's check: kind 22242, this connection's
// challenge, this relay's URL (scheme, host and path, so a relay under a
// base path is told apart), created_at within authWindow of the gate's
// clock, and the signature last (the costly part). It returns "" or why not.
func (c *conn) checkAuthEvent(evt *nostr.Event, challenge string) string {
	if evt.Kind != nostr.KindClientAuthentication {
		return "an AUTH event must be kind 22242"
	}
	if evt.Tags.FindWithValue("challenge", challenge) == nil {
		return "the AUTH event does not carry this connection's challenge"
	}
	tag := evt.Tags.Find("relay")
	if tag == nil || !c.namesThisRelay(tag[1]) {
		return "the AUTH event does not name this relay (" + c.relayURL + ")"
	}
	now := c.g.clk.Now()
	if t := evt.CreatedAt.Time(); t.Before(now.Add(-authWindow)) || t.After(now.Add(authWindow)) {
		return "the AUTH event's created_at is more than 10 minutes from now"
	}
	if ok, err := evt.CheckSignature(); err != nil || !ok {
		return "signature is invalid"
	}
	return ""
}

// namesThisRelay reports whether an AUTH event's relay tag names this relay
// by any of its URLs.
func (c *conn) namesThisRelay(u string) bool {
	if sameRelayURL(u, c.relayURL) {
		return true
	}
	for _, o := range c.g.opts.OtherRelayURLs {
		if sameRelayURL(u, o) {
			return true
		}
	}
	return false
}

// sameRelayURL compares two relay URLs in nip34's one canonical form
// (scheme and host lower-cased, default port and trailing slash dropped,
// path kept).
func sameRelayURL(a, b string) bool {
	na, err := nip34.NormalizeRelayURL(a)
	if err != nil {
		return false
	}
	nb, err := nip34.NormalizeRelayURL(b)
	return err == nil && na == nb
}
