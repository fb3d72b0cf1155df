package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/config"
)

// F23: every per-IP cap counted single addresses, so one IPv6 client, which
// owns a /64 and may use any address in it, was as many clients as it
// liked: five addresses of one /64 filled a relay-wide cap of 100 held
// announcements (per-IP 20) and a newcomer was refused. Behind a trusted
// proxy, the addresses of one /64 now share one budget for websocket
// connections and held announcements; another /64 and other IPv4
// addresses have their own.
func TestAbuse_F23_IPv6NetworkIsOneClient(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Server.TrustedProxies = []string{"127.0.0.1"}
		c.Purgatory.MaxHeldAnnouncementsPerIP = 2
		c.Relay.Limits.MaxConnectionsPerIP = 3
	})
	from := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
	announce := func(addr string, i int) (bool, string) {
		cl, code, body := e.dialHeader(from(addr))
		if cl == nil {
			t.Fatalf("connection from %s refused: %d %s", addr, code, body)
		}
		ok, msg := cl.publish(e.announcement(newKey(t), fmt.Sprint("f23-", i)))
		cl.c.CloseNow()
		return ok, msg
	}
	// Two announcements from two addresses of one /64: the network's quota.
	for i, addr := range []string{"2001:db8:1:2::a", "2001:db8:1:2::b"} {
		if ok, msg := announce(addr, i); !ok || !strings.HasPrefix(msg, purg) {
			t.Fatalf("announcement %d from %s: %v %q", i, addr, ok, msg)
		}
	}
	ok, msg := announce("2001:db8:1:2:ffff::c", 2)
	if ok || !strings.HasPrefix(msg, "rate-limited: 2 repositories announced from your address") {
		t.Fatalf("a third address of the same /64 announced: %v %q, want rate-limited: by the network's quota", ok, msg)
	}
	if ok, msg := announce("2001:db8:1:3::a", 3); !ok || !strings.HasPrefix(msg, purg) {
		t.Fatalf("another /64 was refused: %v %q", ok, msg)
	}
	// IPv4 addresses stay one client each (client_prefix_v4 = 32).
	for i, addr := range []string{"203.0.113.1", "203.0.113.2"} {
		for j := 0; j < 2; j++ {
			if ok, msg := announce(addr, 10+2*i+j); !ok || !strings.HasPrefix(msg, purg) {
				t.Fatalf("IPv4 %s announcement %d: %v %q", addr, j, ok, msg)
			}
		}
	}

	// Websocket connections: max_connections_per_ip = 3 for the /64.
	for _, addr := range []string{"2001:db8:7:7::1", "2001:db8:7:7::2", "2001:db8:7:7::3"} {
		if cl, code, body := e.dialHeader(from(addr)); cl == nil {
			t.Fatalf("connection from %s refused: %d %s", addr, code, body)
		}
	}
	cl, code, body := e.dialHeader(from("2001:db8:7:7:1:2:3:4"))
	if cl != nil || code != http.StatusTooManyRequests || !strings.Contains(body, "3 connections from your address") {
		t.Fatalf("a fourth connection from the same /64 got %d %q, want 429 by the network's cap", code, body)
	}
	if cl, code, body := e.dialHeader(from("2001:db8:7:8::1")); cl == nil {
		t.Fatalf("a connection from another /64 refused: %d %s", code, body)
	}
}

// TestF23_ClientPrefixConfigurable: with client_prefix_v6 = 128 every
// address is its own client again, for an operator who wants that.
func TestF23_ClientPrefixConfigurable(t *testing.T) {
	e := newEnv(t, func(c *config.Config) {
		c.Server.TrustedProxies = []string{"127.0.0.1"}
		c.Server.ClientPrefixV6 = 128
		c.Relay.Limits.MaxConnectionsPerIP = 1
	})
	for _, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2"} {
		if cl, code, body := e.dialHeader(http.Header{"X-Forwarded-For": {addr}}); cl == nil {
			t.Fatalf("connection from %s refused with /128 keys: %d %s", addr, code, body)
		}
	}
}
