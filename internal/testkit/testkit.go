// Package testkit owns the small helpers many packages' tests share: a
// throwaway Nostr identity and the events it signs (Key), and a free
// loopback port for a server that cannot listen on port 0 itself
// (FreePort), and the git client of a test, isolated from the machine's
// config (GitClientEnv, Git, GitWork, GitCommit, GitRepo: git.go). Waiting is
// internal/testwait's, log sinks internal/testlog's.
//
// It holds no assertions about the code under test, and it must never be
// imported by production code.
package testkit

import (
	"fmt"
	"net"
	"testing"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/nbd-wtf/go-nostr"
)

// Key is a throwaway Nostr identity: secret key, public key (hex) and npub.
type Key struct{ SK, PK, Npub string }

// NewKey makes a fresh identity.
func NewKey(t testing.TB) Key {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return k
}

// GenerateKey is NewKey for goroutines a test starts, which must not call
// t.Fatal.
func GenerateKey() (Key, error) {
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		return Key{}, fmt.Errorf("derive public key: %w", err)
	}
	return Key{SK: sk, PK: pk, Npub: nip34.Npub(pk)}, nil
}

// Sign signs evt as k in place (id, pubkey, sig) and returns it.
func (k Key) Sign(t testing.TB, evt *nostr.Event) *nostr.Event {
	t.Helper()
	return Sign(t, k.SK, evt)
}

// Sign is Key.Sign for a test that holds a bare secret key (a fixed key
// set, a key generated once per package): it signs evt with sk in place and
// returns it, failing t if sk cannot sign.
func Sign(t testing.TB, sk string, evt *nostr.Event) *nostr.Event {
	t.Helper()
	if err := evt.Sign(sk); err != nil {
		t.Fatalf("testkit: sign: %v", err)
	}
	return evt
}

// Event is an event of kind with tags and content, created at, signed as k.
func (k Key) Event(t testing.TB, kind int, at nostr.Timestamp, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	if tags == nil {
		tags = nostr.Tags{}
	}
	return k.Sign(t, &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content})
}

// FreePort reserves a free 127.0.0.1 port and releases it for a server
// that is told its port (a config file, nginx, Caddy) instead of
// listening on port 0.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := LoopbackPort()
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return p
}

// LoopbackPort is FreePort for code without a testing.TB (a TestMain).
func LoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
