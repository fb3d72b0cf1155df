package gate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
)

// G08-1: NIP-42 AUTH is checked against the relay URL with its base path,
// this connection's challenge, kind 22242 and created_at within ten minutes
// of the gate's clock (a fake clock here, so the window is exact).
func TestG08_1_AuthChecksRelayURLChallengeKindAndWindow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clk := clock.NewFake(now)
	const relayURL = "wss://git.example.com/grasp"
	e := newEnvWith(t, Options{RelayURL: relayURL, Private: &fakePrivate{restricting: true}}, clk)
	c := e.dial()
	challenge, _ := c.expect("AUTH")[1].(string)
	if challenge == "" {
		t.Fatal("no challenge on connect while something is private")
	}
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	auth := func(kind int, challenge, relay string, at time.Time) nostr.Event {
		evt := nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()),
			Tags: nostr.Tags{{"relay", relay}, {"challenge", challenge}}}
		if err := evt.Sign(sk); err != nil {
			t.Fatal(err)
		}
		return evt
	}
	for _, bad := range []struct {
		name string
		evt  nostr.Event
		want string
	}{
		{"relay without its base path", auth(22242, challenge, "wss://git.example.com", now), "does not name this relay"},
		{"another host", auth(22242, challenge, "wss://other.example.com/grasp", now), "does not name this relay"},
		{"another challenge", auth(22242, "x"+challenge, relayURL, now), "challenge"},
		{"another kind", auth(1, challenge, relayURL, now), "kind 22242"},
		{"11 minutes old", auth(22242, challenge, relayURL, now.Add(-11*time.Minute)), "10 minutes"},
		{"11 minutes ahead", auth(22242, challenge, relayURL, now.Add(11*time.Minute)), "10 minutes"},
	} {
		c.sendJSON("AUTH", bad.evt)
		v := c.expect("OK")
		if v[2] != false || !strings.Contains(v[3].(string), bad.want) || !strings.HasPrefix(v[3].(string), "invalid:") {
			t.Errorf("%s: got %v, want OK false invalid: ...%s...", bad.name, v, bad.want)
		}
	}
	// positive control: the same relay written differently (case, a
	// trailing slash), nine minutes old by the fake clock
	good := auth(22242, challenge, "WSS://Git.Example.com/grasp/", now.Add(-9*time.Minute))
	c.sendJSON("AUTH", good)
	if v := c.expect("OK"); v[2] != true {
		t.Fatalf("valid AUTH refused: %v", v)
	}
	c.sendJSON("EVENT", signedEvent(t, sk, 1, "hello", now.Unix()))
	c.expect("OK")
	e.backend.mu.Lock()
	last := e.backend.metas[len(e.backend.metas)-1]
	e.backend.mu.Unlock()
	if last.Authed != pk {
		t.Fatalf("authenticated as %q, want %s", last.Authed, pk)
	}
}

// fakePrivate hides events whose content is "secret" from everyone but
// member, and refuses filters naming #t "secret" the same way.
type fakePrivate struct {
	restricting bool
	member      string
}

func (p *fakePrivate) Restricting() bool { return p.restricting }
func (p *fakePrivate) Withholding() bool { return false }
func (p *fakePrivate) Withheld() (ids, authors []string) {
	return nil, nil
}

func (p *fakePrivate) who() func(string) bool {
	return func(pk string) bool { return pk != "" && pk == p.member }
}

func (p *fakePrivate) Readers(_ context.Context, evt *nostr.Event) func(string) bool {
	if evt.Content == "secret" {
		return p.who()
	}
	return nil
}

func (p *fakePrivate) Named(_ context.Context, f nostr.Filter) func(string) bool {
	for _, v := range f.Tags["t"] {
		if v == "secret" {
			return p.who()
		}
	}
	return nil
}

func (p *fakePrivate) MayWrite(ctx context.Context, authed string, evt *nostr.Event) bool {
	who := p.Readers(ctx, evt)
	return who == nil || who(authed)
}

// G08-2: the gate enforces what Private decides on every verb: EVENT,
// REQ (stored and live), COUNT and NEG-OPEN; an unauthenticated client is
// told auth-required:, an authenticated non-member restricted:, and the
// member (positive control) sees and writes.
func TestG08_2_GateEnforcesPrivateOnEveryVerb(t *testing.T) {
	memberSK := nostr.GeneratePrivateKey()
	memberPK, _ := nostr.GetPublicKey(memberSK)
	p := &fakePrivate{restricting: true, member: memberPK}
	e := newEnvWith(t, Options{Private: p}, nil)

	login := func(c *rawClient, sk string) {
		challenge, _ := c.expect("AUTH")[1].(string)
		evt := nostr.Event{Kind: 22242, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"relay", e.url}, {"challenge", challenge}}}
		evt.Sign(sk)
		c.sendJSON("AUTH", evt)
		if v := c.expect("OK"); v[2] != true {
			t.Fatalf("AUTH: %v", v)
		}
	}
	member := e.dial()
	login(member, memberSK)
	anon := e.dial()
	anon.expect("AUTH")
	other := e.dial()
	login(other, nostr.GeneratePrivateKey())

	// live subscriptions open before the member publishes
	for _, c := range []*rawClient{member, anon, other} {
		c.sendJSON("REQ", "live", nostr.Filter{Kinds: []int{1}, LimitZero: true})
		c.expect("EOSE")
	}
	secret := signedEvent(t, memberSK, 1, "secret", time.Now().Unix())
	public := signedEvent(t, memberSK, 1, "public", time.Now().Unix())

	// EVENT: refused to others, accepted from the member
	anon.sendJSON("EVENT", secret)
	if v := anon.expect("OK"); v[2] != false || !strings.HasPrefix(v[3].(string), "auth-required:") {
		t.Fatalf("anonymous EVENT: %v", v)
	}
	other.sendJSON("EVENT", secret)
	if v := other.expect("OK"); v[2] != false || !strings.HasPrefix(v[3].(string), "restricted:") {
		t.Fatalf("non-member EVENT: %v", v)
	}
	// live delivery: the member gets both (read along with its OKs: the
	// backend broadcasts before it answers), the others only the public
	// one, which, sent after, proves the secret one was skipped
	member.sendJSON("EVENT", secret)
	member.sendJSON("EVENT", public)
	var live []string
	for oks := 0; oks < 2; {
		v := member.read()
		switch v[0] {
		case "OK":
			if v[2] != true {
				t.Fatalf("member EVENT: %v", v)
			}
			oks++
		case "EVENT":
			live = append(live, v[2].(map[string]any)["id"].(string))
		}
	}
	for len(live) < 2 {
		live = append(live, member.expect("EVENT")[2].(map[string]any)["id"].(string))
	}
	// pipelined EVENTs are ingested concurrently, in either order
	if !(live[0] == secret.ID && live[1] == public.ID) && !(live[0] == public.ID && live[1] == secret.ID) {
		t.Fatalf("member live: %v, want %s and %s", live, secret.ID, public.ID)
	}
	for _, c := range []*rawClient{anon, other} {
		if v := c.expect("EVENT"); v[2].(map[string]any)["id"] != public.ID {
			t.Fatalf("non-member live delivery leaked: %v", v)
		}
	}

	// stored REQ and COUNT: filtered for others, whole for the member
	ids := func(c *rawClient) []string {
		c.sendJSON("REQ", "q", nostr.Filter{Kinds: []int{1}})
		var out []string
		for {
			v := c.read()
			if v[0] == "EOSE" {
				return out
			}
			if v[0] == "EVENT" && v[1] == "q" {
				out = append(out, v[2].(map[string]any)["id"].(string))
			}
		}
	}
	count := func(c *rawClient) float64 {
		c.sendJSON("COUNT", "n", nostr.Filter{Kinds: []int{1}})
		return c.expect("COUNT")[2].(map[string]any)["count"].(float64)
	}
	if got := ids(member); len(got) != 2 || count(member) != 2 {
		t.Fatalf("member REQ %v", got)
	}
	for _, c := range []*rawClient{anon, other} {
		if got := ids(c); len(got) != 1 || got[0] != public.ID {
			t.Fatalf("REQ leaked: %v", got)
		}
		if n := count(c); n != 1 {
			t.Fatalf("COUNT leaked: %v", n)
		}
	}

	// a filter naming the private thing outright is refused as a whole
	named := nostr.Filter{Kinds: []int{1}, Tags: nostr.TagMap{"t": {"secret"}}}
	anon.sendJSON("REQ", "named", named)
	if v := anon.expect("CLOSED"); !strings.HasPrefix(v[2].(string), "auth-required:") {
		t.Fatalf("anonymous named REQ: %v", v)
	}
	other.sendJSON("COUNT", "named", named)
	if v := other.expect("CLOSED"); !strings.HasPrefix(v[2].(string), "restricted:") {
		t.Fatalf("non-member named COUNT: %v", v)
	}
	other.sendJSON("NEG-OPEN", "neg", named, "6100000200")
	if v := other.expect("NEG-ERR"); !strings.HasPrefix(v[2].(string), "restricted:") {
		t.Fatalf("non-member named NEG-OPEN: %v", v)
	}
	member.sendJSON("REQ", "named", named)
	member.expect("EOSE")
}
