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

// A test's git client is the same everywhere: fixed author and date, so
// the same work gives the same commit id in every package and on every
// machine, whatever the machine's git config says.
func TestGitWorkIsReproducible(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "someone else")
	a, b := GitWork(t), GitWork(t)
	ha, hb := Git(t, a, "rev-parse", "HEAD"), Git(t, b, "rev-parse", "HEAD")
	if ha != hb || len(ha) != 40 {
		t.Fatalf("two identical works have commits %q and %q", ha, hb)
	}
	if _, err := GitTry(a, "rev-parse", "refs/heads/none"); err == nil {
		t.Fatal("GitTry hid git's failure")
	}
}
