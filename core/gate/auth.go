package gate

import (
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"
)

// NIP-42: a connection's challenge is sent when an answer first asks the
// client to authenticate ("auth-required:"), and an AUTH event signed over
// it and this relay's URL authenticates the connection as its author.

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
	pubkey, ok := nip42.ValidateAuthEvent(&evt, challenge, c.relayURL)
	if !ok {
		return c.send(appendOK(evt.ID, false, "invalid: the AUTH event does not match this connection's challenge and relay URL"))
	}
	c.authMu.Lock()
	c.authed = pubkey
	c.authMu.Unlock()
	return c.send(appendOK(evt.ID, true, ""))
}
