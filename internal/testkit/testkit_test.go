package testkit

import (
	"fmt"
	"net"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

func TestKeySignsVerifiableEvents(t *testing.T) {
	a, b := NewKey(t), NewKey(t)
	if a.SK == b.SK || !nip34.IsHex64(a.PK) || a.Npub != nip34.Npub(a.PK) {
		t.Fatalf("keys %+v and %+v", a, b)
	}
	evt := a.Event(t, 1, 1700000000, nil, "hi")
	if ok, err := evt.CheckSignature(); !ok || err != nil || evt.PubKey != a.PK || evt.CreatedAt != 1700000000 || evt.Tags == nil {
		t.Fatalf("event %+v: signature ok %v, %v", evt, ok, err)
	}
}

func TestFreePortIsListenable(t *testing.T) {
	p := FreePort(t)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		t.Fatalf("port %d: %v", p, err)
	}
	ln.Close()
}

func TestSignWithABareSecretKey(t *testing.T) {
	k := NewKey(t)
	evt := Sign(t, k.SK, &nostr.Event{Kind: 7, CreatedAt: 1700000000, Content: "+"})
	if ok, err := evt.CheckSignature(); !ok || err != nil || evt.PubKey != k.PK {
		t.Fatalf("event %+v: signature ok %v, %v", evt, ok, err)
	}
}
