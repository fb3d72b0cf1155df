package gate

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/khatru"
	"github.com/grasp-dev/grasp/internal/testwait"
	"github.com/nbd-wtf/go-nostr"
)

// Bad framing and verbs (relays.md §5 groups 1 and 2) get a prefixed NOTICE
// or CLOSED from the gate, and the connection keeps serving.
func TestFraming_BadInputsAnsweredConnectionSurvives(t *testing.T) {
	e := newEnv(t, Options{})
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

// khatru still answers the event-level errors (group 3) through the gate.
func TestFraming_EventErrorsReachKhatru(t *testing.T) {
	e := newEnv(t, Options{})
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

func TestFraming_ConnHeaderNotSpoofable(t *testing.T) {
	seen := make(chan [2]string, 1)
	e := newEnv(t, Options{}, func(e *env) {
		e.relay.OnConnect = append(e.relay.OnConnect, func(ctx context.Context) {
			r := khatru.GetConnection(ctx).Request
			seen <- [2]string{r.Header.Get(ConnHeader), r.Header.Get("X-Forwarded-For")}
		})
	})
	h := map[string][]string{ConnHeader: {"spoofed"}, "X-Forwarded-For": {"203.0.113.9"}}
	conn, _, err := websocket.DefaultDialer.Dial(e.url, h)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	got := <-seen
	if got[0] == "" || got[0] == "spoofed" {
		t.Fatalf("backend saw connection id %q, want the gate's own", got[0])
	}
	if got[1] != "" {
		t.Fatalf("backend saw X-Forwarded-For %q from an untrusted client", got[1])
	}
}

// A backend refusal before the upgrade reaches the client as HTTP.
func TestFraming_BackendRefusalPassedThrough(t *testing.T) {
	e := newEnv(t, Options{}, func(e *env) {
		e.relay.RejectConnection = append(e.relay.RejectConnection, func(*http.Request) bool { return true })
	})
	_, resp, err := websocket.DefaultDialer.Dial(e.url, nil)
	if err == nil {
		t.Fatalf("dial succeeded, want a refusal")
	}
	if resp == nil || resp.StatusCode != 429 {
		t.Fatalf("response %v, want 429 from khatru", resp)
	}
}

func TestGate_CloseDisconnectsClients(t *testing.T) {
	e := newEnv(t, Options{})
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
