// Package clientip owns one question: which address is the client of an
// HTTP request. Per-IP limits (websocket connections, negentropy sessions,
// git processes) and the pipeline's Meta.Remote all ask it, so that a
// deployment behind a TLS reverse proxy, which every public one is, limits
// its clients one by one instead of the proxy as a whole (audit 2026-11,
// F18b).
//
// The answer is the socket's peer unless that peer is a proxy the operator
// listed in server.trusted_proxies. Then X-Forwarded-For is read from the
// right, skipping listed proxies, and the first address that is not one is
// the client: everything to its left was written by the client itself and
// is not believed. A request straight from an untrusted peer has its
// X-Forwarded-For ignored whole.
//
// The address is not what the caps count: one IPv6 client holds at least a
// /64 and picks any address in it at will (audit 2026-11b, F23). Clients
// turns the address into the client's key, its network under
// server.client_prefix_v4 (default /32: the address) and
// server.client_prefix_v6 (default /64), and that key is what every per-IP
// cap counts and what Meta.Remote carries: the callers never see prefixes.
//
// This package never rate-limits or refuses anything; it only names the
// client. Nothing else in grasp parses X-Forwarded-For or cuts an address
// to its network.
package clientip

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Trusted is the list of proxies whose X-Forwarded-For is believed. The
// zero value trusts none: every client is its socket's peer.
type Trusted struct {
	nets []netip.Prefix
}

// Parse reads server.trusted_proxies: IP addresses ("10.0.0.1", "::1")
// and CIDR prefixes ("10.0.0.0/8").
func Parse(list []string) (Trusted, error) {
	var t Trusted
	for _, s := range list {
		s = strings.TrimSpace(s)
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return Trusted{}, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
			}
			t.nets = append(t.nets, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return Trusted{}, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
		}
		a = a.Unmap()
		t.nets = append(t.nets, netip.PrefixFrom(a, a.BitLen()))
	}
	return t, nil
}

// Empty reports whether no proxy is trusted.
func (t Trusted) Empty() bool { return len(t.nets) == 0 }

func (t Trusted) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range t.nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Of names the client of r: its socket peer, or, when that peer is a
// trusted proxy, the rightmost X-Forwarded-For entry that is not. When
// every entry is a trusted proxy (a request made by the proxy's own
// network) the leftmost is the client. A malformed entry ends the walk at
// the last good address, because a proxy would not have written it.
func (t Trusted) Of(r *http.Request) string {
	peer := Peer(r)
	if len(t.nets) == 0 {
		return peer
	}
	a, err := netip.ParseAddr(peer)
	if err != nil || !t.trusts(a) {
		return peer
	}
	client := peer
	hops := forwarded(r.Header.Values("X-Forwarded-For"))
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(hops[i])
		if err != nil {
			return client
		}
		client = h.Unmap().String()
		if !t.trusts(h) {
			return client
		}
	}
	return client
}

// forwarded splits X-Forwarded-For headers (there may be several, which
// together form one list) into their entries, in order.
func forwarded(values []string) []string {
	var out []string
	for _, v := range values {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// Default prefix lengths: an IPv4 address is one client (carrier NAT
// makes even that several people, but a shorter prefix would make whole
// ISPs one); an IPv6 client is its /64, the smallest network a site is
// given (RFC 6177) and the one SLAAC picks addresses in.
const (
	DefaultPrefixV4 = 32
	DefaultPrefixV6 = 64
)

// Clients names the clients of requests: the address behind the trusted
// proxies (Trusted.Of) and the key the per-IP caps count (Key).
type Clients struct {
	Trusted
	v4, v6 int
	warn   *untrusted // nil: ignored headers are not logged
}

// New is Clients for server.trusted_proxies and the prefix lengths
// server.client_prefix_v4 (1-32) and client_prefix_v6 (1-128); 0 is the
// default length.
func New(trustedProxies []string, prefixV4, prefixV6 int) (Clients, error) {
	if prefixV4 == 0 {
		prefixV4 = DefaultPrefixV4
	}
	if prefixV6 == 0 {
		prefixV6 = DefaultPrefixV6
	}
	if err := CheckPrefix(false, prefixV4); err != nil {
		return Clients{}, fmt.Errorf("client_prefix_v4: %w", err)
	}
	if err := CheckPrefix(true, prefixV6); err != nil {
		return Clients{}, fmt.Errorf("client_prefix_v6: %w", err)
	}
	t, err := Parse(trustedProxies)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Trusted: t, v4: prefixV4, v6: prefixV6}, nil
}

// CheckPrefix reports whether bits is a prefix length New accepts for
// IPv6 (v6) or IPv4 addresses.
func CheckPrefix(v6 bool, bits int) error {
	hi := 32
	if v6 {
		hi = 128
	}
	if bits < 1 || bits > hi {
		return fmt.Errorf("%d is not between 1 and %d (bits of an address one client owns)", bits, hi)
	}
	return nil
}

// Key names r's client for the per-IP caps: KeyOf its address.
func (c Clients) Key(r *http.Request) string { return c.KeyOf(c.Of(r)) }

// KeyOf is the key of the client at addr: the address itself when its
// prefix is the whole address (IPv4 by default), else its network in CIDR
// form ("2001:db8:1:2::/64"). What is not an IP address (a unix socket's
// peer) is its own key. The zero Clients uses the default lengths.
func (c Clients) KeyOf(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.Unmap().WithZone("")
	bits := cmp.Or(c.v6, DefaultPrefixV6)
	if a.Is4() {
		bits = cmp.Or(c.v4, DefaultPrefixV4)
	}
	if bits >= a.BitLen() {
		return a.String()
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// Peer is the host of r.RemoteAddr, the socket's peer: the client when no
// proxy stands in front of the server.
func Peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().String()
	}
	return host
}
