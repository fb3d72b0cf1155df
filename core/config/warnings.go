package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Warning is a setting that is valid but almost certainly not what the
// operator wants. `grasp serve` logs each at start and `grasp check-config`
// prints them; neither refuses the config.
type Warning struct {
	Key string
	Msg string
}

func (w Warning) String() string { return w.Key + ": " + w.Msg }

// Warnings lists the warnings of c (after Parse or Validate).
func (c Config) Warnings() []Warning {
	var ws []Warning
	add := func(key, format string, args ...any) {
		ws = append(ws, Warning{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.PublicURLFromWildcard() {
		add("server.public_url", "server.listen %s is a wildcard address and public_url is not set: clients are told %s, "+
			"so announcements naming this machine's real host are refused; set server.public_url", c.Server.Listen, c.Server.PublicURL)
	}
	if h := exampleHost(c.Server.PublicURL); h != "" {
		add("server.public_url", "%s is an example host (RFC 2606): announcements must list the URL clients really use, "+
			"so every real announcement is refused; set it to this server's own URL", h)
	}
	if c.Metrics.Enabled && !loopbackListen(c.Metrics.Listen) {
		// audit 2026-11b, F24: the admin paths stay guarded, /metrics not.
		add("metrics.listen", "%s is not a loopback address: /metrics (repository, client and relay counts) is served to "+
			"anyone who reaches it; firewall the port or keep it on 127.0.0.1", c.Metrics.Listen)
	}
	if strings.HasPrefix(c.Server.PublicURL, "https://") && len(c.Server.TrustedProxies) == 0 && loopbackListen(c.Server.Listen) {
		// audit 2026-11b, F32: grasp speaks no TLS, so a proxy on this
		// machine forwards to it, and without trusted_proxies every client
		// is the proxy.
		add("server.trusted_proxies", "public_url is https and server.listen %s is on loopback, so a reverse proxy on this "+
			"machine forwards to grasp; with trusted_proxies empty every client has the proxy's address and all share one "+
			"per-IP budget: set trusted_proxies = [\"127.0.0.1\", \"::1\"]", c.Server.Listen)
	}
	return ws
}

// exampleHost is the host of the URL u when it is one of the names
// reserved for examples (example.com, .org, .net and their subdomains,
// the .example and .invalid domains), "" otherwise.
func exampleHost(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	h := strings.ToLower(strings.TrimSuffix(p.Hostname(), "."))
	for _, d := range []string{"example.com", "example.org", "example.net", "example", "invalid"} {
		if h == d || strings.HasSuffix(h, "."+d) {
			return h
		}
	}
	return ""
}

// loopbackListen reports whether listen (host:port) accepts only this
// machine's connections: a loopback address or localhost.
func loopbackListen(listen string) bool {
	h, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}
