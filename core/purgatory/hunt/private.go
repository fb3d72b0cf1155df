package hunt

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/grasp-dev/grasp/core/netguard"
)

// pinSource resolves the source's host once and returns git settings
// (key=value, for git -c) that pin the connection to the checked address and
// forbid redirects. With AllowPrivate it returns nothing (git resolves as
// usual).
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
		if netguard.Internal(a) {
			return nil, &FetchError{Kind: KindRefused, URL: raw,
				Err: fmt.Errorf("%s resolves to the internal address %s; not fetching (purgatory.fetch_private_addresses is off)", host, a)}
		}
	}
	ip := addrs[0].Unmap().String()
	if addrs[0].Is6() && !addrs[0].Is4In6() {
		ip = "[" + ip + "]"
	}
	return []string{
		fmt.Sprintf("http.curloptResolve=%s:%s:%s", host, t.port, ip),
		"http.followRedirects=false",
	}, nil
}

func (g *GitContext) resolver() *net.Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}
