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
