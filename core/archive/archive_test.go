package archive

import (
	"strings"
	"testing"

	"github.com/grasp-dev/grasp/core/env"
	"github.com/grasp-dev/grasp/core/nip34"
)

func TestParseEntryForms(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	npub := nip34.Npub(hex)
	for _, c := range []struct {
		in   string
		want Entry
	}{
		{npub, Entry{Pubkey: hex}},
		{strings.ToUpper(hex), Entry{Pubkey: hex}},
		{npub + "/repo", Entry{Pubkey: hex, Identifier: "repo"}},
		{hex + "/repo", Entry{Pubkey: hex, Identifier: "repo"}},
		{"30617:" + hex + ":repo", Entry{Pubkey: hex, Identifier: "repo"}},
	} {
		got, err := ParseEntry(c.in)
		if err != nil || got != c.want {
			t.Fatalf("ParseEntry(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "repo", "npub1xyz", "30618:" + hex + ":r", "30617:" + hex + ":", npub + "/"} {
		if _, err := ParseEntry(bad); err == nil {
			t.Fatalf("ParseEntry(%q) accepted", bad)
		}
	}
}

func TestParseHostAndMatch(t *testing.T) {
	for _, c := range []struct{ in, host, port string }{
		{"Relay.NGIT.dev", "relay.ngit.dev", ""},
		{"git.example.com:8443", "git.example.com", "8443"},
		{"https://gitnostr.com", "gitnostr.com", ""},
		{"wss://relay.example:7000/", "relay.example", "7000"},
	} {
		h, p, err := ParseHost(c.in)
		if err != nil || h != c.host || p != c.port {
			t.Fatalf("ParseHost(%q) = %q %q %v", c.in, h, p, err)
		}
	}
	for _, bad := range []string{"", "a b", "https://x/y", "host/path", "user@host"} {
		if _, _, err := ParseHost(bad); err == nil {
			t.Fatalf("ParseHost(%q) accepted", bad)
		}
	}
	svc, _ := nip34.ParseService("https://archive.example")
	s, err := New(Options{Hosts: []string{"relay.ngit.dev", "git.example.com:8443"}, Service: svc}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	ann := func(urls ...string) nip34.Announcement {
		return nip34.Announcement{Pubkey: strings.Repeat("1", 64), Identifier: "r", Clone: urls}
	}
	for _, c := range []struct {
		url string
		in  bool
	}{
		{"https://relay.ngit.dev/npub1x/r.git", true},
		{"https://RELAY.ngit.dev:443/npub1x/r.git", true},
		{"https://relay.ngit.dev.evil.com/r.git", false},
		{"https://evil.com/relay.ngit.dev/r.git", false},
		{"https://relay.ngit.dev@evil.com/r.git", false},
		{"https://git.example.com:8443/r.git", true},
		{"https://git.example.com/r.git", false},
	} {
		if got := s.Covers(ann(c.url), nil); got != c.in {
			t.Fatalf("Covers(%s) = %v, want %v", c.url, got, c.in)
		}
	}
}

// A nil or empty scope is archive mode off: the GRASP-01 rule alone.
func TestScopeOffIsGrasp01(t *testing.T) {
	svc, _ := nip34.ParseService("https://archive.example")
	s, err := New(Options{ReadOnly: true, Service: svc}, env.Env{})
	if err != nil {
		t.Fatal(err)
	}
	a := nip34.Announcement{Pubkey: strings.Repeat("1", 64), Identifier: "r", Clone: []string{"https://other.example/r.git"}}
	if s.Enabled() || s.ReadOnly() || s.Decide(a, nil) != NotHosted || s.Curation() != "" {
		t.Fatal("an empty scope acts as archive mode")
	}
	var none *Scope
	if none.Enabled() || none.ReadOnly() || none.Curation() != "" {
		t.Fatal("a nil scope acts as archive mode")
	}
}
