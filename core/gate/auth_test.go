package gate

import (
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/policy"
)

// NIP-42: an answer "auth-required:" brings the connection's challenge; an
// AUTH event over it and this relay's URL authenticates the connection, and
// later EVENTs reach the backend with the authenticated pubkey (the meta a
// plugin sees as ctx.authed). A wrong challenge or relay is refused.
func TestNIP42_AuthRequiredThenAuthenticated(t *testing.T) {
	e := newEnv(t, config.Limits{})
	e.backend.refuse = func(_ *nostr.Event, meta policy.Meta) string {
		if meta.Authed == "" {
			return "auth-required: authenticate to publish here"
		}
		return ""
	}
	c := e.dial()
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	first := signedEvent(t, sk, 1, "needs auth", 1_700_000_000)
	c.sendJSON("EVENT", first)
	if v := c.expect("OK"); v[2] != false || !strings.HasPrefix(v[3].(string), "auth-required:") {
		t.Fatalf("got %v, want OK false auth-required:", v)
	}
	challenge, _ := c.expect("AUTH")[1].(string)
	if challenge == "" {
		t.Fatal("no challenge sent")
	}
	auth := func(challenge, relay string) nostr.Event {
		evt := nostr.Event{Kind: nostr.KindClientAuthentication, CreatedAt: nostr.Now(),
			Tags: nostr.Tags{{"relay", relay}, {"challenge", challenge}}}
		if err := evt.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return evt
	}
	wrong := auth("not-the-challenge", e.url)
	c.sendJSON("AUTH", wrong)
	if v := c.expect("OK"); v[2] != false {
		t.Fatalf("AUTH with a wrong challenge: %v", v)
	}
	good := auth(challenge, e.url)
	c.sendJSON("AUTH", good)
	if v := c.expect("OK"); v[1] != good.ID || v[2] != true {
		t.Fatalf("AUTH: %v", v)
	}
	c.sendJSON("EVENT", first)
	if v := c.expect("OK"); v[2] != true {
		t.Fatalf("after AUTH: %v", v)
	}
	e.backend.mu.Lock()
	last := e.backend.metas[len(e.backend.metas)-1]
	e.backend.mu.Unlock()
	if last.Authed != pk {
		t.Fatalf("backend saw authed %q, want %s", last.Authed, pk)
	}
}
