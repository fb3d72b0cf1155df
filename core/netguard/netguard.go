// Package netguard keeps connections that grasp opens on behalf of
// strangers — git fetches from clone URLs, websocket syncs with relay URLs,
// both taken from anyone's announcements — off the operator's internal
// network (SSRF). It owns the one definition of an internal address and a
// dialer that enforces it on the address actually connected to, so DNS
// rebinding cannot get around a check made earlier.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// internalPrefixes are ranges no public service lives in that netip's
// predicates do not cover.
var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// Internal reports whether a is an address a connection made for a
// stranger must not reach: loopback, private, link-local, multicast,
// unspecified and the other non-public ranges.
func Internal(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range internalPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ErrInternal is returned when a connection to an internal address is
// refused.
var ErrInternal = errors.New("refusing to connect to an internal address")

// control runs after the name is resolved and before the socket connects:
// the address it sees is the one used.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netguard: unexpected address %q: %w", address, err)
	}
	if Internal(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrInternal, ap.Addr())
	}
	return nil
}

// Dialer returns a dialer that refuses internal addresses.
func Dialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: control}
}

// HTTPClient returns an HTTP client (for websocket dials) whose
// connections refuse internal addresses. It uses no proxy: a proxy would
// connect on our behalf and bypass the check.
func HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = Dialer().DialContext
	return &http.Client{Transport: tr}
}

// DialContext is Dialer().DialContext, for APIs that take a function.
func DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return Dialer().DialContext(ctx, network, address)
}
