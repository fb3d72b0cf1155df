package server_test

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/server"
)

// Helpers of the GRASP-08 tests of issue 23 (private stays private).

// restart stops e and starts a server on the same configuration (data
// dir, listener, store): what survives it is what was durable.
func (e *testServer) restart() *testServer {
	e.t.Helper()
	return e.restartOn(e.cfg)
}

// restartOn is restart with cfg (the file as the operator left it).
func (e *testServer) restartOn(cfg config.Config) *testServer {
	e.t.Helper()
	base, ws := e.base, e.ws
	e.stop()
	if err := e.srv.Wait(); err != nil {
		e.t.Fatalf("server stopped with %v", err)
	}
	next := startEnv(e.t, cfg, nil, server.Extensions{})
	next.base, next.ws = base, ws
	return next
}

// publicRelay is the relay URL NIP-42 AUTH events name: the public URL's,
// whichever instance the connection reached.
func (e *testServer) publicRelay() string { return e.cfg.RelayURL() }

// publicClone is k's clone URL d under the public URL: the `u` of a
// NIP-98 token, whichever instance the request reaches.
func (e *testServer) publicClone(k key, d string) string {
	return strings.TrimSuffix(e.cfg.Server.PublicURL, "/") + e.cloneURL(k, d)[len(e.base):]
}

// signIn authenticates cl as k on the next challenge, naming the public
// relay URL (authRaw names e.ws, the instance's own address).
func (e *testServer) signIn(cl *client, k key) {
	e.t.Helper()
	m := cl.next(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	evt := nip42.CreateUnsignedAuthEvent(str(m[1]), k.PK, e.publicRelay())
	if err := evt.Sign(k.SK); err != nil {
		e.t.Fatal(err)
	}
	cl.send("AUTH", evt)
	ok := cl.next(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m[1]) == evt.ID })
	var b bool
	json.Unmarshal(ok[2], &b)
	if !b {
		e.t.Fatalf("AUTH refused: %s", ok[3])
	}
}

// authWith authenticates cl as k over challenge (already received).
func (e *testServer) authWith(cl *client, k key, challenge string) {
	e.t.Helper()
	evt := nip42.CreateUnsignedAuthEvent(challenge, k.PK, e.publicRelay())
	if err := evt.Sign(k.SK); err != nil {
		e.t.Fatal(err)
	}
	cl.send("AUTH", evt)
	ok := cl.next(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m[1]) == evt.ID })
	var b bool
	json.Unmarshal(ok[2], &b)
	if !b {
		e.t.Fatalf("AUTH refused: %s", ok[3])
	}
}

// signedIn is a connection authenticated as k (the challenge comes on
// connect while anything is private).
func (e *testServer) signedIn(k key) *client {
	e.t.Helper()
	cl := e.dial()
	e.signIn(cl, k)
	return cl
}

// token is a NIP-98 token of k for u and method, as an Authorization value.
func (e *testServer) token(k key, u, method string) string {
	e.t.Helper()
	evt := e.sign(k, 27235, nostr.Tags{{"u", u}, {"method", method}}, "")
	b, _ := json.Marshal(evt)
	return "Nostr " + base64.StdEncoding.EncodeToString(b)
}

// deletes is k's NIP-09 request deleting evs (by id, and addressable ones
// by their address too).
func (e *testServer) deletes(k key, evs ...*nostr.Event) *nostr.Event {
	e.t.Helper()
	var tags nostr.Tags
	for _, evt := range evs {
		tags = append(tags, nostr.Tag{"e", evt.ID})
		if nostr.IsAddressableKind(evt.Kind) {
			tags = append(tags, nostr.Tag{"a", strconv.Itoa(evt.Kind) + ":" + evt.PubKey + ":" + evt.Tags.GetD()})
		}
	}
	return e.sign(k, 5, tags, "deleted")
}

// secretsIn returns those of ids found in evs.
func secretsIn(evs []*nostr.Event, ids []string) []string {
	got := idSet(evs)
	var out []string
	for _, id := range ids {
		if got[id] {
			out = append(out, id)
		}
	}
	return out
}

// anyIn returns those of needles that occur in s.
func anyIn(s string, needles ...string) []string {
	var out []string
	for _, n := range needles {
		if n != "" && strings.Contains(s, n) {
			out = append(out, n)
		}
	}
	return out
}

// newEmptyNeg is the first message of a NIP-77 client holding nothing.
func newEmptyNeg() string {
	vec := vector.New()
	vec.Seal()
	return negentropy.New(vec, 60_000).Start()
}

// publishPrivate publishes k's private announcement ann on a connection
// authenticated as k and returns the connection: where nothing is private
// yet the refusal brings the challenge; otherwise it comes on connect, and
// the connection signs in before it publishes (an EVENT sent before AUTH
// would race it).
func (e *testServer) publishPrivate(k key, ann *nostr.Event) *client {
	e.t.Helper()
	var cl *client
	if e.srv.Restricting() {
		cl = e.signedIn(k)
	} else {
		cl = e.dial()
		cl.send("EVENT", ann)
		e.signIn(cl, k)
	}
	cl.mustAccept(ann, purg)
	return cl
}
