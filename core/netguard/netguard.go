// Package netguard keeps connections that grasp opens on behalf of
// strangers — git fetches from clone URLs, websocket syncs with relay URLs,
// both taken from anyone's announcements — off the operator's internal
// network (SSRF). It owns the one definition of an internal address and a
// dialer that enforces it on the address actually connected to, so DNS
// rebinding cannot get around a check made earlier. It never resolves
// names itself and never decides which URLs are fetched.
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
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and the broadcast address
	// IPv6 forms that carry or reach an IPv4 address without being
	// IPv4-mapped (which Unmap handles). Measured (audit F09c addendum):
	// host names resolving only to NAT64, IPv4-compatible, 6to4 or Teredo
	// addresses reached an internal host.
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated, RFC 4291): no public service
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (RFC 2765)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64 (RFC 8215): the operator's own translators
	netip.MustParsePrefix("2002::/16"),       // 6to4 (deprecated, RFC 7526): tunnels to any IPv4 address
	netip.MustParsePrefix("2001::/32"),       // Teredo (RFC 4380): tunnels to an obfuscated IPv4 address
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated, RFC 3879)
	netip.MustParsePrefix("100::/64"),        // discard-only (RFC 6666)
}

// nat64 is the well-known NAT64 prefix (RFC 6052). DNS64 networks
// synthesise an address in it for every IPv4-only host, so refusing it
// would cut IPv6-only servers off from public git hosts and relays; the
// IPv4 address in its last 32 bits is checked instead.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Internal reports whether a is an address a connection made for a
// stranger must not reach: loopback, private, link-local, multicast,
// unspecified and the other non-public ranges, and IPv6 addresses that
// tunnel or translate to IPv4 (NAT64 only when its embedded IPv4 address is
// internal; 6to4, Teredo and IPv4-compatible always).
func Internal(a netip.Addr) bool {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		return Internal(netip.AddrFrom4([4]byte(b[12:])))
	}
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
