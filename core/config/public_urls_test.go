package config

import (
	"slices"
	"strings"
	"testing"
)

// Issue 25 part 5: server.public_url may list several URLs — a clearnet
// name, a .onion in the http:// form ngit writes, a base-path alias. The
// first is the canonical one; all are canonicalised and checked like it.
func TestPublicURLList(t *testing.T) {
	cfg, err := Parse([]byte(`[server]
public_url = ["HTTPS://Git.Example.org:443/", "http://abcdefghijklmnop.onion", "https://example.org/grasp/"]
`), "grasp.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Server.PublicURL != "https://git.example.org" {
		t.Errorf("public_url's first entry = %q", cfg.Server.PublicURL)
	}
	if want := []string{"http://abcdefghijklmnop.onion", "https://example.org/grasp"}; !slices.Equal(cfg.Server.PublicURLAliases, want) {
		t.Errorf("aliases = %q, want %q", cfg.Server.PublicURLAliases, want)
	}
	svc, err := cfg.Service()
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.RelayURLs(); !slices.Equal(got, []string{"wss://git.example.org", "ws://abcdefghijklmnop.onion", "wss://example.org/grasp"}) {
		t.Errorf("relay URLs = %q", got)
	}

	// One string still works, and an array of one is the same.
	for _, v := range []string{`"https://git.example.org"`, `["https://git.example.org"]`} {
		c, err := Parse([]byte("[server]\npublic_url = "+v+"\n"), "grasp.toml")
		if err != nil || c.Validate() != nil || c.Server.PublicURL != "https://git.example.org" || len(c.Server.PublicURLAliases) != 0 {
			t.Errorf("public_url = %s: %v %q %q", v, err, c.Server.PublicURL, c.Server.PublicURLAliases)
		}
	}
}

func TestPublicURLListRefusesBadEntries(t *testing.T) {
	for v, want := range map[string]string{
		`[]`: "server.public_url: want a string or a non-empty array",
		`["https://a.example", "ftp://b.example"]`:        "server.public_url[1]: scheme must be http or https",
		`["https://a.example", "https://u@b.example"]`:    "server.public_url[1]: must not carry user info",
		`["https://a.example", ""]`:                       "server.public_url[1]: must not be empty",
		`["https://a.example", "https://A.example:443/"]`: "names the same host, port and path",
		`["https://a.example", 7]`:                        "want a string",
		`["https://a.example", "https://b.example/a b"]`:  "server.public_url[1]",
	} {
		c, err := Parse([]byte("[server]\npublic_url = "+v+"\n"), "grasp.toml")
		if err == nil {
			err = c.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("public_url = %s: error %v, want one containing %q", v, err, want)
		}
	}
}

// A changed alias is a change of server.public_url, which needs a restart.
func TestPublicURLAliasChangeNeedsRestart(t *testing.T) {
	a, b := Default(), Default()
	a.Server.PublicURLAliases = []string{"http://x.onion"}
	b.Server.PublicURLAliases = []string{"http://y.onion"}
	if got := RestartNeeded(a, b); !slices.Contains(got, "server.public_url") {
		t.Fatalf("RestartNeeded = %q, want server.public_url", got)
	}
}
