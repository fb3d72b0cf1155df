package gate

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/fiatjaf/khatru"
	"github.com/grasp-dev/grasp/core/clock"
	"github.com/nbd-wtf/go-nostr"
)

const purgatoryNote = "purgatory: won't be served until git data arrives"

// noteEnv notes every event published on connections that dialled with the
// header X-Test-Note, as the relay's acceptance hook would for events it
// holds in purgatory; events with content "refuse" are then rejected.
func noteEnv(t *testing.T, opts Options) *env {
	return newEnv(t, opts, func(e *env) {
		e.relay.RejectEvent = append(e.relay.RejectEvent,
			func(ctx context.Context, evt *nostr.Event) (bool, string) {
				if khatru.GetConnection(ctx).Request.Header.Get("X-Test-Note") != "" {
					if !e.gate.NoteOK(ctx, evt.ID, purgatoryNote) {
						return true, "error: note not recorded"
					}
				}
				return false, ""
			},
			func(_ context.Context, evt *nostr.Event) (bool, string) {
				return evt.Content == "refuse", "blocked: refused"
			})
	})
}

func (e *env) dialHeader(h http.Header) *rawClient {
	e.t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(e.url, h)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	e.t.Cleanup(func() { c.Close() })
	return &rawClient{t: e.t, conn: c}
}

func TestNoteOK_MessageReachesPublisherOnly(t *testing.T) {
	e := noteEnv(t, Options{})
	noted := e.dialHeader(http.Header{"X-Test-Note": {"1"}})
	plain := e.dial()
	sk := nostr.GeneratePrivateKey()

	evt := signedEvent(t, sk, 1, "held", 1_700_000_000)
	noted.sendJSON("EVENT", evt)
	if v := noted.expect("OK"); v[1] != evt.ID || v[2] != true || v[3] != purgatoryNote {
		t.Fatalf("noted publisher got %v, want OK true %q", v, purgatoryNote)
	}
	// The same id from another connection: khatru's duplicate OK, untouched.
	plain.sendJSON("EVENT", evt)
	if v := plain.expect("OK"); v[1] != evt.ID || v[2] != true || v[3] != "" {
		t.Fatalf("other connection got %v, want its own plain OK", v)
	}
	// A note pending on the noted connection does not leak to another
	// connection's OK for the same id.
	other := signedEvent(t, sk, 1, "plain", 1_700_000_001)
	var notedConn *conn
	e.gate.conns.Range(func(_, v any) bool {
		if v.(*conn).req.Header.Get("X-Test-Note") != "" {
			notedConn = v.(*conn)
		}
		return true
	})
	notedConn.addNote(other.ID, "not yours")
	plain.sendJSON("EVENT", other)
	if v := plain.expect("OK"); v[1] != other.ID || v[2] != true || v[3] != "" {
		t.Fatalf("got %v, want an empty message", v)
	}
	if n := notedConn.nNotes.Load(); n != 1 {
		t.Fatalf("%d notes on the noted connection, want its 1 untouched", n)
	}
}

func TestNoteOK_RejectedEventKeepsItsReason(t *testing.T) {
	e := noteEnv(t, Options{})
	noted := e.dialHeader(http.Header{"X-Test-Note": {"1"}})
	sk := nostr.GeneratePrivateKey()
	evt := signedEvent(t, sk, 1, "refuse", 1_700_000_000)
	noted.sendJSON("EVENT", evt)
	if v := noted.expect("OK"); v[2] != false || v[3] != "blocked: refused" {
		t.Fatalf("got %v, want OK false blocked: refused", v)
	}
	if n := e.gateConn(t).nNotes.Load(); n != 0 {
		t.Fatalf("%d notes left after the OK, want 0", n)
	}
}

func TestNoteOK_OutsideGateConnection(t *testing.T) {
	e := newEnv(t, Options{})
	if e.gate.NoteOK(context.Background(), strings.Repeat("a", 64), "x") {
		t.Fatalf("NoteOK without a khatru connection reported success")
	}
}

// Notes expire after NoteTTL and the map stays within MaxNotesPerConn.
func TestNoteOK_NotesExpireAndAreBounded(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	g := New(http.NotFoundHandler(), Options{Clock: fake, NoteTTL: 10 * time.Second, MaxNotesPerConn: 3})
	c := newConn(g, "1", &http.Request{}, nil, nil)
	c.addNote("a", "old")
	fake.Advance(11 * time.Second)
	if _, ok := c.takeNote("a"); ok {
		t.Fatalf("an expired note was used")
	}
	for i := 0; i < 10; i++ {
		c.addNote(fmt.Sprint(i), "m")
		fake.Advance(time.Second)
	}
	if len(c.notes) > 3 {
		t.Fatalf("%d notes held, want at most 3", len(c.notes))
	}
	if msg, ok := c.takeNote("9"); !ok || msg != "m" {
		t.Fatalf("the newest note was lost")
	}
	ok := appendEnvelopeOK("id", `say "hi"`)
	if string(ok) != `["OK","id",true,"say \"hi\""]` {
		t.Fatalf("OK frame %s", ok)
	}
}
