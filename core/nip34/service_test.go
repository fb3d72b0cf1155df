package nip34

import (
	"fmt"
	"strings"
	"testing"
)

const testOnion = "nkkkrgkv3pov3hibjo7kjnc7raslwaqqvmvtzqy2mbsa7liqov6l5qid.onion"

func announce(clone, relays []string) Announcement {
	return Announcement{Pubkey: pkA, Identifier: "my repo", Clone: clone, Relays: relays}
}

func TestG01R2_ListsServiceParsedURLs(t *testing.T) {
	svc, err := ParseService("http://D.example:7334")
	if err != nil {
		t.Fatal(err)
	}
	good := "http://d.example:7334/" + Npub(pkA) + "/my%20repo.git"
	cases := []struct {
		name   string
		clone  string
		relay  string
		listed bool
	}{
		{"exact", good, "ws://d.example:7334", true},
		{"relay trailing slash", good, "ws://d.example:7334/", true},
		{"uppercase host, https scheme same port", "HTTPS://D.EXAMPLE:7334/x.git", "WSS://D.Example:7334", true},
		{"trailing dot host", good, "ws://d.example.:7334", true},
		{"look-alike subdomain", "http://d.example.evil.com:7334/x.git", "ws://d.example.evil.com:7334", false},
		{"look-alike path", "http://evil.com/d.example:7334/x.git", "ws://evil.com/d.example:7334", false},
		{"userinfo pretends host", "http://d.example:7334@evil.com/x.git", "ws://d.example:7334@evil.com", false},
		{"userinfo on right host", "http://evil@d.example:7334/x.git", "ws://evil@d.example:7334", false},
		{"wrong port", "http://d.example:7335/x.git", "ws://d.example:7335", false},
		{"default port is not 7334", "http://d.example/x.git", "ws://d.example", false},
		{"clone with ws scheme", "ws://d.example:7334/x.git", "ws://d.example:7334", false},
		{"relay with http scheme", good, "http://d.example:7334", false},
		{"relay with path", good, "ws://d.example:7334/other", false},
		{"relay with query", good, "ws://d.example:7334/?x=1", false},
		{"no clone", "", "ws://d.example:7334", false},
		{"no relay", good, "", false},
		{"garbage", "::::", "ws://", false},
		{"substring only", "http://notd.example:7334/x.git", "ws://notd.example:7334", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var clone, relays []string
			if c.clone != "" {
				clone = []string{"https://github.com/x/y.git", c.clone}
			}
			if c.relay != "" {
				relays = []string{"wss://relay.damus.io", c.relay}
			}
			if got := ListsService(announce(clone, relays), svc); got != c.listed {
				t.Fatalf("ListsService = %v, want %v", got, c.listed)
			}
		})
	}
}

func TestG01R2_DefaultPortsNormalised(t *testing.T) {
	svc, err := ParseService("https://git.example.org/")
	if err != nil {
		t.Fatal(err)
	}
	a := announce([]string{"https://git.example.org:443/" + Npub(pkA) + "/r.git"}, []string{"wss://git.example.org:443/"})
	if !ListsService(a, svc) {
		t.Fatal("explicit default port not matched")
	}
	a = announce([]string{"http://git.example.org/x.git"}, []string{"ws://git.example.org"})
	if ListsService(a, svc) {
		t.Fatal("port 80 matched a port-443 service")
	}
	if got := svc.RelayURL(); got != "wss://git.example.org" {
		t.Fatalf("RelayURL = %q", got)
	}
	if got := svc.CloneURL(pkA, "my repo"); got != "https://git.example.org/"+Npub(pkA)+"/my%20repo.git" {
		t.Fatalf("CloneURL = %q", got)
	}
}

func TestG01R2_ClonePathCheck(t *testing.T) {
	svc, err := ParseService("http://127.0.0.1:7000")
	if err != nil {
		t.Fatal(err)
	}
	svc.CheckClonePath = true
	relay := []string{"ws://127.0.0.1:7000"}
	ok := []string{
		svc.CloneURL(pkA, "my repo"),
		"http://127.0.0.1:7000/" + Npub(pkA) + "/my repo.git/",
	}
	bad := []string{
		"http://127.0.0.1:7000/" + Npub(pkB) + "/my%20repo.git",
		"http://127.0.0.1:7000/" + Npub(pkA) + "/other.git",
		"http://127.0.0.1:7000/" + pkA + "/my%20repo.git",
		"http://127.0.0.1:7000/x/" + Npub(pkA) + "/my%20repo.git",
	}
	for _, c := range ok {
		if !ListsService(announce([]string{c}, relay), svc) {
			t.Errorf("%s not accepted", c)
		}
	}
	for _, c := range bad {
		if ListsService(announce([]string{c}, relay), svc) {
			t.Errorf("%s accepted", c)
		}
	}
}

func TestServiceWithBasePathAndIPv6(t *testing.T) {
	svc, err := ParseService("https://host.example/grasp")
	if err != nil {
		t.Fatal(err)
	}
	if !ListsService(announce([]string{"https://host.example/grasp/" + Npub(pkA) + "/r.git"}, []string{"wss://host.example/grasp/"}), svc) {
		t.Fatal("base path not matched")
	}
	if ListsService(announce([]string{"https://host.example/" + Npub(pkA) + "/r.git"}, []string{"wss://host.example/grasp"}), svc) {
		t.Fatal("clone outside base path matched")
	}
	if ListsService(announce([]string{"https://host.example/grasp/x.git"}, []string{"wss://host.example"}), svc) {
		t.Fatal("relay outside base path matched")
	}
	v6, err := ParseService("http://[::1]:8080")
	if err != nil {
		t.Fatal(err)
	}
	if !ListsService(announce([]string{"http://[::1]:8080/x.git"}, []string{"ws://[::1]:8080"}), v6) {
		t.Fatal("IPv6 not matched")
	}
	if v6.HostPort() != "[::1]:8080" {
		t.Fatalf("HostPort = %q", v6.HostPort())
	}
	for _, bad := range []string{"ws://x", "ftp://x", "x", "http://u@x", "http://x/?q"} {
		if _, err := ParseService(bad); err == nil {
			t.Errorf("ParseService(%q) accepted", bad)
		}
	}
}

func TestBasePath_Within(t *testing.T) {
	svc, _ := ParseService("https://example.org/git")
	for path, want := range map[string]string{
		"/git": "/", "/git/": "/", "/git/npub1x/r.git/info/refs": "/npub1x/r.git/info/refs",
		"/": "", "/gitx": "", "/other/git": "", "": "",
	} {
		rest, ok := svc.Within(path)
		if ok != (want != "") || rest != want {
			t.Errorf("Within(%q) = %q %v, want %q", path, rest, ok, want)
		}
	}
	root, _ := ParseService("https://example.org")
	if rest, ok := root.Within("/x"); !ok || rest != "/x" {
		t.Errorf("root service: Within(/x) = %q %v", rest, ok)
	}
	// An announcement listing another path on the same host is not this
	// service (positive control: the base path itself is).
	other := announce([]string{"https://example.org/other/" + Npub(pkA) + "/r.git"}, []string{"wss://example.org/other"})
	if ListsService(other, svc) {
		t.Error("https://example.org/other counted as this service")
	}
	mine := announce([]string{"https://example.org/git/" + Npub(pkA) + "/r.git"}, []string{"wss://example.org/git"})
	if !ListsService(mine, svc) {
		t.Error("https://example.org/git not counted as this service")
	}
}

func TestN34_4_ListsServiceParts(t *testing.T) {
	svc, _ := ParseService("http://d:1")
	c, r := ListsServiceParts(announce([]string{"http://d:1/x.git"}, nil), svc)
	if !c || r {
		t.Fatalf("clone %v relay %v", c, r)
	}
}

// RelayURL is the one derivation of this server's websocket URL from its
// public URL; config.RelayURL and the relay call it.
func TestRelayURLDerivedFromPublicURL(t *testing.T) {
	for _, tc := range []struct{ public, want string }{
		{"http://127.0.0.1:7334", "ws://127.0.0.1:7334"},
		{"https://git.example.org", "wss://git.example.org"},
		{"HTTPS://Git.Example.org:443/", "wss://git.example.org"},
		{"http://git.example.org:80", "ws://git.example.org"},
		{"https://git.example.org:8443", "wss://git.example.org:8443"},
		{"http://git.example.org:443", "ws://git.example.org:443"},
		{"http://[::1]:7334", "ws://[::1]:7334"},
		{"https://example.org/grasp", "wss://example.org/grasp"},
		{"https://example.org:8443/a/b/", "wss://example.org:8443/a/b"},
	} {
		svc, err := ParseService(tc.public)
		if err != nil {
			t.Fatalf("%s: %v", tc.public, err)
		}
		got := svc.RelayURL()
		if got != tc.want {
			t.Errorf("%s: RelayURL = %q, want %q", tc.public, got, tc.want)
		}
		if n, err := NormalizeRelayURL(got); err != nil || n != got {
			t.Errorf("%s: RelayURL %q is not canonical (NormalizeRelayURL gives %q, %v)", tc.public, got, n, err)
		}
		if !svc.ListsRelay(got) || !svc.ListsRelay(got+"/") {
			t.Errorf("%s: the service does not recognise its own relay URL %q", tc.public, got)
		}
	}
}

// Issue 25 part 5, several service identities: ListsService, Within and
// the GRASP-06 endpoint answer for every identity and for none other.
func TestServiceIdentities_ListsAnyIdentity(t *testing.T) {
	svc, err := ParseService("https://git.example.org", "http://"+testOnion, "https://example.org/grasp")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		clone, relay string
		want         bool
	}{
		{"https://git.example.org/" + Npub(pkA) + "/r.git", "wss://git.example.org", true},
		{"http://" + testOnion + "/" + Npub(pkA) + "/r.git", "ws://" + testOnion, true},
		{"https://example.org/grasp/" + Npub(pkA) + "/r.git", "wss://example.org/grasp", true},
		// mixed identities still list this service
		{"http://" + testOnion + "/" + Npub(pkA) + "/r.git", "wss://git.example.org", true},
		{"https://example.org/" + Npub(pkA) + "/r.git", "wss://example.org", false}, // outside the alias's base path
		{"https://" + testOnion + "/" + Npub(pkA) + "/r.git", "wss://" + testOnion, false},
		{"http://evil" + testOnion + "/" + Npub(pkA) + "/r.git", "ws://evil" + testOnion, false},
	} {
		a := Announcement{Pubkey: pkA, Identifier: "r", Clone: []string{c.clone}, Relays: []string{c.relay}}
		if got := ListsService(a, svc); got != c.want {
			t.Errorf("ListsService(%s, %s) = %v, want %v", c.clone, c.relay, got, c.want)
		}
	}
	for path, want := range map[string]string{"/grasp/x": "/x", "/grasp": "/", "/x": "/x"} {
		if rest, ok := svc.Within(path); !ok || rest != want {
			t.Errorf("Within(%s) = %q %v, want %q", path, rest, ok, want)
		}
	}
	if signer, id, ok := svc.PRsEndpoint("http://" + testOnion + "/prs/" + Npub(pkA) + "/r.git"); !ok || signer != pkA || id != "r" {
		t.Errorf("PRsEndpoint under the .onion = %q %q %v", signer, id, ok)
	}
	if _, err := ParseService("https://git.example.org", "https://GIT.example.org:443/"); err == nil {
		t.Error("a duplicate identity was accepted")
	}
	if got := fmt.Sprint(svc.CloneURLs(pkA, "r")); !strings.Contains(got, "http://"+testOnion+"/"+Npub(pkA)+"/r.git") {
		t.Errorf("CloneURLs = %s", got)
	}
}
