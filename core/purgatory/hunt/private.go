package hunt

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/grasp-dev/grasp/core/netguard"
)

// Resolver resolves source host names; *net.Resolver implements it. Tests
// inject their own (DNS rebinding is tested without DNS).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// pinSource checks the source's host and returns git settings (key=value,
// for git -c) that pin the connection to the checked address and forbid
// redirects. With AllowPrivate it returns nothing (git resolves as usual).
//
// A name is resolved once, refused if any of its addresses is internal, and
// pinned with http.curloptResolve under exactly the name in t.url, so curl
// never resolves it again (DNS rebinding). An address literal needs no pin:
// curl does not resolve it. curl 7.88 could not have taken one for an IPv6
// host anyway: it cannot parse a CURLOPT_RESOLVE entry whose host is an IPv6
// address, in any bracketing, and fails the transfer (curl issue 16357,
// fixed in 8.13), which made every IPv6-literal source unfetchable.
func (g *GitContext) pinSource(ctx context.Context, raw string, t target) ([]string, error) {
	if g.AllowPrivate {
		return nil, nil
	}
	internal := g.internal
	if internal == nil {
		internal = netguard.Internal
	}
	refuse := func(a netip.Addr) error {
		return &FetchError{Kind: KindRefused, URL: raw,
			Err: fmt.Errorf("%s is the internal address %s; not fetching (purgatory.fetch_private_addresses is off)", t.domain, a)}
	}
	noRedirects := "http.followRedirects=false"
	if t.ip.IsValid() {
		if internal(t.ip) {
			return nil, refuse(t.ip)
		}
		return []string{noRedirects}, nil
	}
	addrs, err := g.resolver().LookupNetIP(ctx, "ip", t.name)
	if err != nil {
		return nil, &FetchError{Kind: KindNetwork, URL: raw, Err: fmt.Errorf("resolve %s: %w", t.name, err)}
	}
	if len(addrs) == 0 {
		return nil, &FetchError{Kind: KindNetwork, URL: raw, Err: fmt.Errorf("resolve %s: no addresses", t.name)}
	}
	for _, a := range addrs {
		if internal(a) {
			return nil, refuse(a)
		}
	}
	a := addrs[0].Unmap()
	ip := a.String()
	if a.Is6() {
		ip = "[" + ip + "]"
	}
	return []string{fmt.Sprintf("http.curloptResolve=%s:%s:%s", t.name, t.port, ip), noRedirects}, nil
}

func (g *GitContext) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}
