package nip34

import (
	"strings"
	"testing"
)

// The one relay-URL normalisation: what config (bootstrap relays), sync
// (announced relays, this server's own URL) and the sync dialers all agree on.
func TestNormalizeRelayURL(t *testing.T) {
	cases := []struct{ in, want string }{
		// a bare host gets wss://, as ngit-grasp and grasp.toml do
		{"relay.example.com", "wss://relay.example.com"},
		{"relay.example.com:7777/nostr", "wss://relay.example.com:7777/nostr"},
		// case, default ports, trailing slashes and dots
		{"WSS://Relay.Example.com:443/", "wss://relay.example.com"},
		{"wss://Relay.Example.com/", "wss://relay.example.com"},
		{"wss://relay.example.com.", "wss://relay.example.com"},
		{"ws://h:80/sub", "ws://h/sub"},
		{"ws://relay.example.com:80/path/", "ws://relay.example.com/path"},
		{"ws://127.0.0.1:7334", "ws://127.0.0.1:7334"},
		{"ws://[::1]:7334/", "ws://[::1]:7334"},
		{"wss://relay.example.com/nostr", "wss://relay.example.com/nostr"},
		// the fragment is never sent; the query is part of the address
		{"  wss://r.example#frag ", "wss://r.example"},
		{"wss://r.example/?x=1", "wss://r.example?x=1"},
	}
	for _, c := range cases {
		got, err := NormalizeRelayURL(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeRelayURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "   ", "ftp://x", "https://relay.example.com", "http://relay.example.com",
		"wss://", "wss://user@relay.example.com", "::"} {
		if got, err := NormalizeRelayURL(bad); err == nil {
			t.Errorf("NormalizeRelayURL(%q) = %q, want an error", bad, got)
		}
	}
	if _, err := NormalizeRelayURL("https://relay.example"); err == nil || !strings.Contains(err.Error(), "ws or wss") {
		t.Errorf("an http(s) relay URL must say it wants ws or wss, got %v", err)
	}
}
