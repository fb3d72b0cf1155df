package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestInternal(t *testing.T) {
	for addr, internal := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true,
		"169.254.169.254": true, "100.64.0.1": true, "0.0.0.0": true, "::1": true,
		"fe80::1": true, "fc00::1": true, "::ffff:127.0.0.1": true, "224.0.0.1": true,
		"93.184.216.34": false, "2606:4700::1111": false, "1.1.1.1": false,
	} {
		if got := Internal(netip.MustParseAddr(addr)); got != internal {
			t.Errorf("%s: internal=%v, want %v", addr, got, internal)
		}
	}
}

// The check runs on the address connected to, so a hostname that resolves
// to loopback is refused too (DNS rebinding cannot get around it).
func TestDialerRefusesInternalAddressesByNameAndNumber(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the internal server was reached")
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, host := range []string{"127.0.0.1", "localhost"} {
		_, err := Dialer().DialContext(context.Background(), "tcp", net.JoinHostPort(host, port))
		if !errors.Is(err, ErrInternal) {
			t.Fatalf("dial %s: %v, want ErrInternal", host, err)
		}
		resp, err := HTTPClient().Get("http://" + net.JoinHostPort(host, port) + "/")
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET via %s reached the server", host)
		}
		if !errors.Is(err, ErrInternal) {
			t.Fatalf("GET via %s: %v, want ErrInternal", host, err)
		}
	}
}

// Audit F09c: IPv6 forms that reach IPv4 addresses. Host names resolving
// only to NAT64, IPv4-compatible, 6to4 or Teredo addresses reached an
// internal host. NAT64's well-known prefix is judged by the IPv4 address it
// embeds (DNS64 networks need it for public hosts); the tunnelling and
// deprecated forms are refused whatever they embed. Every form is refused by
// the dialer before a packet is sent.
func TestAbuse_F09c_IPv6FormsThatReachIPv4(t *testing.T) {
	for addr, internal := range map[string]bool{
		// NAT64 well-known prefix: embedded loopback, private, metadata, public
		"64:ff9b::7f00:1":          true,
		"64:ff9b::127.0.0.1":       true,
		"64:ff9b::a00:1":           true,
		"64:ff9b::169.254.169.254": true,
		"64:ff9b::808:808":         false, // 8.8.8.8 through DNS64: public
		// local-use NAT64 (RFC 8215)
		"64:ff9b:1::7f00:1":  true,
		"64:ff9b:1::808:808": true,
		// IPv4-compatible and IPv4-translated
		"::127.0.0.1":        true,
		"::7f00:1":           true,
		"::8.8.8.8":          true,
		"::ffff:0:127.0.0.1": true,
		// 6to4: 2002:<v4>::/48
		"2002:7f00:1::1":  true,
		"2002:a00:1::":    true,
		"2002:808:808::1": true,
		// Teredo: 2001:0:<server v4>:<flags>:<port>:<client v4 XOR ffffffff>
		"2001:0:4136:e378:8000:63bf:80ff:fffe": true, // client 127.0.0.1
		"2001:0:4136:e378:8000:63bf:f7f7:f7f7": true, // client 8.8.8.8
		// site-local, discard-only, reserved IPv4
		"fec0::1":         true,
		"100::1":          true,
		"240.0.0.1":       true,
		"255.255.255.255": true,
		// still public
		"2001:4860:4860::8888": false,
		"2a00:1450::1":         false,
	} {
		a := netip.MustParseAddr(addr)
		if got := Internal(a); got != internal {
			t.Errorf("%s: internal=%v, want %v", addr, got, internal)
		}
		if !internal {
			continue
		}
		_, err := Dialer().DialContext(context.Background(), "tcp", net.JoinHostPort(addr, "80"))
		if !errors.Is(err, ErrInternal) {
			t.Errorf("dial %s: %v, want ErrInternal", addr, err)
		}
	}
}
