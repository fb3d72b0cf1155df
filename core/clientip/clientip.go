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
// This package never rate-limits or refuses anything; it only names the
// client. Nothing else in grasp parses X-Forwarded-For.
package clientip

import (
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
