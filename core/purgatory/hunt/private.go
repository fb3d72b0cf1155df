package hunt

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// internalPrefixes are ranges a public git host never lives in; the ones
// netip's predicates do not cover.
var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// internalAddr reports whether a is an address a fetch from a public clone
// URL must not reach.
func internalAddr(a netip.Addr) bool {
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

// pinSource resolves the source's host once and returns git options that
// pin the connection to the checked address and forbid redirects. With
// AllowPrivate it returns nothing (git resolves as usual).
func (g *GitContext) pinSource(ctx context.Context, raw string) ([]string, error) {
	if g.AllowPrivate {
		return nil, nil
	}
	t, ok := parseSource(raw)
	if !ok {
		return nil, &FetchError{Kind: KindLocal, URL: raw, Err: fmt.Errorf("only http and https sources are fetched")}
	}
	host := t.domain
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ips, err := g.resolver().LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, &FetchError{Kind: KindNetwork, URL: raw, Err: fmt.Errorf("resolve %s: %w", host, err)}
		}
		addrs = ips
	}
	if len(addrs) == 0 {
		return nil, &FetchError{Kind: KindNetwork, URL: raw, Err: fmt.Errorf("resolve %s: no addresses", host)}
	}
	for _, a := range addrs {
		if internalAddr(a) {
			return nil, &FetchError{Kind: KindRefused, URL: raw,
				Err: fmt.Errorf("%s resolves to the internal address %s; not fetching (purgatory.fetch_private_addresses is off)", host, a)}
		}
	}
	ip := addrs[0].Unmap().String()
	if addrs[0].Is6() && !addrs[0].Is4In6() {
		ip = "[" + ip + "]"
	}
	return []string{
		"-c", fmt.Sprintf("http.curloptResolve=%s:%s:%s", host, t.port, ip),
		"-c", "http.followRedirects=false",
	}, nil
}

func (g *GitContext) resolver() *net.Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}
