package clientip

import (
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/clock"
)

// UntrustedWarnEvery is how often at most the log says that requests
// carry X-Forwarded-For from a peer not in server.trusted_proxies: any
// client may send the header, so the line must not be a log flood.
const UntrustedWarnEvery = 10 * time.Minute

// untrusted notes requests whose X-Forwarded-For is ignored because their
// peer is not a trusted proxy (audit 2026-11b, F32): behind a proxy
// nobody listed, every client has the proxy's address and all share one
// per-IP budget, and nothing said so.
type untrusted struct {
	clk clock.Clock
	log hclog.Logger
	mu  sync.Mutex
	// last is when the warning was last logged; seen counts the requests
	// since then.
	last time.Time
	seen int
}

// WarnUntrusted is c logging, at most every UntrustedWarnEvery, a warning
// when a request carries X-Forwarded-For from a peer it does not trust.
func (c Clients) WarnUntrusted(log hclog.Logger, clk clock.Clock) Clients {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if clk == nil {
		clk = clock.New()
	}
	c.warn = &untrusted{clk: clk, log: log}
	return c
}

// Of is Trusted.Of, noting an ignored X-Forwarded-For.
func (c Clients) Of(r *http.Request) string {
	if c.warn != nil && len(r.Header.Values("X-Forwarded-For")) > 0 {
		peer := Peer(r)
		if a, err := netip.ParseAddr(peer); err != nil || !c.trusts(a) {
			c.warn.note(peer)
		}
	}
	return c.Trusted.Of(r)
}

func (u *untrusted) note(peer string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seen++
	now := u.clk.Now()
	if !u.last.IsZero() && now.Sub(u.last) < UntrustedWarnEvery {
		return
	}
	u.log.Warn("X-Forwarded-For from a peer not in server.trusted_proxies is ignored: if that peer is a reverse proxy, "+
		"every client behind it has the proxy's address and all share one per-IP budget; list it in server.trusted_proxies",
		"peer", peer, "requests_since_last_warning", u.seen, "next_warning_in", UntrustedWarnEvery.String())
	u.last, u.seen = now, 0
}
