package gate

import (
	"errors"
	"strings"
	"testing"

	"github.com/fasthttp/websocket"
	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clientip"
	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/policy"
	"github.com/grasp-dev/grasp/internal/testwait"
)

// Bad framing and verbs (relays.md §5 groups 1 and 2) get a prefixed NOTICE
// or CLOSED from the gate, and the connection keeps serving.
func TestFraming_BadInputsAnsweredConnectionSurvives(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	cases := []struct {
		name, frame string
		label       string // NOTICE or CLOSED
	}{
		{"non-JSON", `hello`, "NOTICE"},
		{"truncated JSON", `["REQ","x",{"kinds":[1]}`, "NOTICE"},
		{"newline only", "\n", "NOTICE"},
		{"object not array", `{"REQ":1}`, "NOTICE"},
		{"empty array", `[]`, "NOTICE"},
		{"label not a string", `[1,2]`, "NOTICE"},
		{"deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), "NOTICE"},
		{"deep nesting in an event", `["EVENT",{"tags":` + strings.Repeat("[", 50) + strings.Repeat("]", 50) + `}]`, "NOTICE"},
		{"trailing garbage", `["CLOSE","x"]]`, "NOTICE"},
		{"bad escape", `["CLOSE","\x"]`, "NOTICE"},
		{"control character in string", "[\"CLOSE\",\"a\x01b\"]", "NOTICE"},
		{"bad number", `["REQ","x",{"limit":01}]`, "NOTICE"},
		{"unknown verb", `["HELLO","x"]`, "NOTICE"},
		{"lowercase verb", `["req","x",{}]`, "NOTICE"},
		{"EVENT without event", `["EVENT"]`, "NOTICE"},
		{"EVENT with a string", `["EVENT","x"]`, "NOTICE"},
		{"EVENT with two events", `["EVENT",{},{}]`, "NOTICE"},
		{"REQ without id", `["REQ"]`, "NOTICE"},
		{"REQ with numeric id", `["REQ",1,{}]`, "NOTICE"},
		{"REQ with empty id", `["REQ","",{}]`, "NOTICE"},
		{"REQ without filters", `["REQ","id"]`, "CLOSED"},
		{"REQ with a non-object filter", `["REQ","id",[]]`, "CLOSED"},
		{"CLOSE without id", `["CLOSE"]`, "NOTICE"},
		{"CLOSE with numeric id", `["CLOSE",5]`, "NOTICE"},
		{"AUTH without event", `["AUTH"]`, "NOTICE"},
		{"COUNT without filter", `["COUNT","c"]`, "NOTICE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.send(tc.frame)
			v := c.read()
			if v[0] != tc.label {
				t.Fatalf("got %v, want %s", v, tc.label)
			}
			reason, _ := v[len(v)-1].(string)
			if !strings.HasPrefix(reason, "invalid:") {
				t.Fatalf("reason %q, want invalid:", reason)
			}
			c.reqWorks()
		})
	}
	c.t = t
	for _, typ := range []int{websocket.BinaryMessage, websocket.TextMessage} {
		if err := c.conn.WriteMessage(typ, nil); err != nil {
			t.Fatalf("write empty frame: %v", err)
		}
		if v := c.read(); v[0] != "NOTICE" || !strings.HasPrefix(v[1].(string), "invalid:") {
			t.Fatalf("empty frame of type %d: got %v", typ, v)
		}
	}
	if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte(`["REQ","b",{}]`)); err != nil {
		t.Fatalf("write binary: %v", err)
	}
	if v := c.read(); v[0] != "NOTICE" || !strings.Contains(v[1].(string), "binary") {
		t.Fatalf("binary frame: got %v", v)
	}
	// CLOSE of an unknown subscription is harmless.
	c.send(`["CLOSE","never-opened"]`)
	c.reqWorks()
}

// The backend's answers to event-level errors (group 3) reach the client as
// OKs, and what it stored is served.
func TestFraming_EventErrorsAnsweredByBackend(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	sk := nostr.GeneratePrivateKey()
	evt := signedEvent(t, sk, 1, "hello", 1_700_000_000)
	good := evt
	evt.Content = "tampered"
	c.sendJSON("EVENT", evt)
	v := c.expect("OK")
	if v[2] != false || !strings.HasPrefix(v[3].(string), "invalid:") {
		t.Fatalf("tampered event: got %v, want OK false invalid:", v)
	}
	c.sendJSON("EVENT", good)
	if v := c.expect("OK"); v[1] != good.ID || v[2] != true {
		t.Fatalf("good event: got %v", v)
	}
	c.sendJSON("REQ", "q", map[string]any{"ids": []string{good.ID}})
	if v := c.expect("EVENT"); v[1] != "q" {
		t.Fatalf("got %v", v)
	}
	c.expect("EOSE")
}

// The client address the backend sees is the socket's: an untrusted
// client cannot claim another with X-Forwarded-For. Behind a trusted proxy
// the header's rightmost untrusted entry is the client (core/clientip).
func TestFraming_ForwardedForOnlyFromTrustedProxy(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	proxy, err := clientip.Parse([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, trusted := range []bool{false, true} {
		opts := Options{}
		if trusted {
			opts.ClientIP = proxy.Of
		}
		e := newEnvWith(t, opts, nil)
		h := map[string][]string{"X-Forwarded-For": {"203.0.113.9, 10.0.0.1"}}
		c, _, err := websocket.DefaultDialer.Dial(e.url, h)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		rc := &rawClient{t: t, conn: c}
		rc.sendJSON("EVENT", signedEvent(t, sk, 1, "where from", 1_700_000_000))
		rc.expect("OK")
		c.Close()
		e.backend.mu.Lock()
		got := e.backend.metas[0]
		e.backend.mu.Unlock()
		want := "127.0.0.1"
		if trusted {
			// the rightmost hop that is not a trusted proxy; the left
			// entry was written by the client and is not believed
			want = "10.0.0.1"
		}
		if got.Remote != want || got.Source != policy.SourceClient {
			t.Fatalf("trusted=%v: backend saw %+v, want remote %s from a client", trusted, got, want)
		}
	}
}

func TestGate_CloseDisconnectsClients(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	c.reqWorks()
	e.gate.Close()
	c.conn.SetReadDeadline(testwait.Deadline(t))
	_, _, err := c.conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Fatalf("got %v, want close 1001", err)
	}
	if got := e.counter("grasp_gate_connections"); got != 0 {
		t.Fatalf("%v connections after Close, want 0", got)
	}
}
