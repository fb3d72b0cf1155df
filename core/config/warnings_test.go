package config

import (
	"strings"
	"testing"
)

// TestWarnings: check-config and the start log warn about metrics served
// beyond loopback (F24), an https public_url on a loopback listener with
// no trusted proxy (F32), and an example public_url (issue 26); the
// defaults and the settings the docs recommend warn about nothing.
func TestWarnings(t *testing.T) {
	keys := func(mutate func(c *Config)) []string {
		c := Default()
		mutate(&c)
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, w := range c.Warnings() {
			ks = append(ks, w.Key)
		}
		return ks
	}
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"defaults", func(c *Config) {}, ""},
		{"metrics on every interface", func(c *Config) { c.Metrics.Listen = "0.0.0.0:7335" }, "metrics.listen"},
		{"metrics on a LAN address", func(c *Config) { c.Metrics.Listen = "192.0.2.1:7335" }, "metrics.listen"},
		{"metrics off anywhere", func(c *Config) { c.Metrics.Listen = "0.0.0.0:7335"; c.Metrics.Enabled = false }, ""},
		{"metrics on localhost", func(c *Config) { c.Metrics.Listen = "localhost:7335" }, ""},
		{"example public_url", func(c *Config) {
			c.Server.PublicURL = "https://git.example.com"
			c.Server.TrustedProxies = []string{"127.0.0.1"}
		}, "server.public_url"},
		{"https behind a proxy, none trusted", func(c *Config) { c.Server.PublicURL = "https://git.grasp.dev" }, "server.trusted_proxies"},
		{"https behind a trusted proxy", func(c *Config) {
			c.Server.PublicURL = "https://git.grasp.dev"
			c.Server.TrustedProxies = []string{"127.0.0.1", "::1"}
		}, ""},
		{"wildcard listen without public_url", func(c *Config) { c.Server.Listen = "0.0.0.0:7334"; c.Server.PublicURL = "" }, "server.public_url"},
	}
	for _, c := range cases {
		got := strings.Join(keys(c.mutate), ",")
		if got != c.want {
			t.Errorf("%s: warnings %q, want %q", c.name, got, c.want)
		}
	}
	for _, h := range []string{"http://example.org", "https://relay.example", "https://x.invalid:8443", "https://EXAMPLE.NET."} {
		if exampleHost(h) == "" {
			t.Errorf("%s not seen as an example host", h)
		}
	}
	for _, h := range []string{"https://examples.com", "https://myexample.com", "http://127.0.0.1:7334"} {
		if exampleHost(h) != "" {
			t.Errorf("%s seen as an example host", h)
		}
	}
}
