package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/grasp-dev/grasp/core/config"
)

// Copies of live events queued at once are written joined (writeFrames):
// a standard websocket client still reads every message whole and in
// order, for payloads under 126 bytes, up to 64 KiB and beyond (the three
// length encodings), while it pings the server, whose pongs are written by
// another goroutine between the joined frames.
func TestBroadcastCopiesArriveWholeAndInOrder(t *testing.T) {
	e := newEnv(t, config.Limits{})
	c := e.dial()
	subs := []string{"a", "b", "c", "d", "e"}
	for _, id := range subs {
		c.sendJSON("REQ", id, map[string]any{"kinds": []int{1}, "limit": 0})
		c.expect("EOSE")
	}
	pongs := make(chan struct{}, 1000)
	c.conn.SetPongHandler(func(string) error { pongs <- struct{}{}; return nil })
	sizes := []int{0, 50, 125, 126, 1000, 65535, 65536, 200_000}
	type sent struct {
		id   string
		size int
	}
	var want []sent
	for round := range 4 {
		for _, n := range sizes {
			evt := fakeEvent(1_700_000_000 + int64(round))
			evt.Content = strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
			if got := e.gate.Broadcast(evt); got != len(subs) {
				t.Fatalf("broadcast reached %d subscriptions, want %d", got, len(subs))
			}
			want = append(want, sent{evt.ID, len(evt.Content)})
		}
		if err := c.conn.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// Each event reaches the five subscriptions before the next event.
	for i, w := range want {
		seen := map[string]bool{}
		for range subs {
			v := c.read()
			if len(v) != 3 || v[0] != "EVENT" {
				t.Fatalf("message %d: %v, want an EVENT", i, v[:min(len(v), 2)])
			}
			evt, _ := v[2].(map[string]any)
			content, _ := evt["content"].(string)
			if evt["id"] != w.id || len(content) != w.size {
				t.Fatalf("message %d for %v: event %v with %d bytes of content, want %s with %d", i, v[1], evt["id"], len(content), w.id, w.size)
			}
			seen[v[1].(string)] = true
		}
		if len(seen) != len(subs) {
			t.Fatalf("event %d reached subscriptions %v, want all of %v", i, seen, subs)
		}
	}
	c.reqWorks()
	if len(pongs) != 4 {
		t.Fatalf("%d pongs for 4 pings", len(pongs))
	}
}
