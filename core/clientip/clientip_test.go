package clientip

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/grasp-dev/grasp/core/clock"
)

func req(peer string, xff ...string) *http.Request {
	r, _ := http.NewRequest("GET", "http://example.org/", nil)
	r.RemoteAddr = peer
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	return r
}

// TestAbuse_F18b_ClientBehindTrustedProxies: behind a listed proxy the
// client is the rightmost address the proxies did not add; an unlisted
// peer's header is ignored, so a client cannot pick its own address.
func TestAbuse_F18b_ClientBehindTrustedProxies(t *testing.T) {
	trusted, err := Parse([]string{"127.0.0.1", "10.0.0.0/8", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		t    Trusted
		r    *http.Request
		want string
	}{
		{"no proxies trusted: the peer", Trusted{}, req("127.0.0.1:5000", "203.0.113.9"), "127.0.0.1"},
		{"trusted proxy: the client it names", trusted, req("127.0.0.1:5000", "203.0.113.9"), "203.0.113.9"},
		{"spoofed left entry ignored", trusted, req("127.0.0.1:5000", "198.51.100.1, 203.0.113.9"), "203.0.113.9"},
		{"chain of trusted proxies skipped", trusted, req("127.0.0.1:5000", "203.0.113.9, 10.1.2.3"), "203.0.113.9"},
		{"several headers form one list", trusted, req("127.0.0.1:5000", "198.51.100.1", "203.0.113.9, 10.1.2.3"), "203.0.113.9"},
		{"untrusted peer: header ignored", trusted, req("192.0.2.7:5000", "203.0.113.9"), "192.0.2.7"},
		{"trusted peer without header: the peer", trusted, req("127.0.0.1:5000"), "127.0.0.1"},
		{"all hops trusted: the leftmost", trusted, req("127.0.0.1:5000", "10.0.0.5, 10.0.0.6"), "10.0.0.5"},
		{"garbage entry ends the walk", trusted, req("127.0.0.1:5000", "not-an-ip, 10.0.0.6"), "10.0.0.6"},
		{"IPv6 peer and client", trusted, req("[::1]:5000", "2001:db8::7"), "2001:db8::7"},
		{"IPv4-mapped peer is IPv4", trusted, req("[::ffff:127.0.0.1]:5000", "203.0.113.9"), "203.0.113.9"},
	}
	for _, c := range cases {
		if got := c.t.Of(c.r); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestParseRefusesWhatIsNotAnAddress(t *testing.T) {
	for _, bad := range []string{"proxy.example.org", "10.0.0.0/33", "", "1.2.3"} {
		if _, err := Parse([]string{bad}); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if tr, err := Parse([]string{"192.168.0.0/16", "fd00::1"}); err != nil || tr.Empty() {
		t.Fatalf("good list refused: %v", err)
	}
}

// TestAbuse_F23_ClientKeyIsTheNetwork: the addresses of one IPv6 /64 are
// one client; other /64s, and IPv4 addresses, are not; the lengths are the
// operator's to change.
func TestAbuse_F23_ClientKeyIsTheNetwork(t *testing.T) {
	def, err := New(nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	wide, err := New(nil, 24, 48)
	if err != nil {
		t.Fatal(err)
	}
	exact, err := New(nil, 32, 128)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		c          Clients
		addr, want string
	}{
		{def, "2001:db8:1:2::1", "2001:db8:1:2::/64"},
		{def, "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{def, "2001:db8:1:3::1", "2001:db8:1:3::/64"},
		{def, "fe80::1%eth0", "fe80::/64"},
		{def, "203.0.113.9", "203.0.113.9"},
		{def, "::ffff:203.0.113.9", "203.0.113.9"},
		{def, "not-an-address", "not-an-address"},
		{wide, "203.0.113.9", "203.0.113.0/24"},
		{wide, "2001:db8:1:2::1", "2001:db8:1::/48"},
		{exact, "2001:db8:1:2::1", "2001:db8:1:2::1"},
		{Clients{}, "2001:db8:1:2::1", "2001:db8:1:2::/64"},
	}
	for _, c := range cases {
		if got := c.c.KeyOf(c.addr); got != c.want {
			t.Errorf("KeyOf(%s) with /%d,/%d = %s, want %s", c.addr, c.c.v4, c.c.v6, got, c.want)
		}
	}
	// Behind a trusted proxy the key is the forwarded client's network.
	behind, err := New([]string{"127.0.0.1"}, 32, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got := behind.Key(req("127.0.0.1:5000", "2001:db8:1:2::77")); got != "2001:db8:1:2::/64" {
		t.Errorf("Key behind a proxy = %s", got)
	}
	for _, bad := range [][2]int{{33, 64}, {-1, 64}, {32, 129}, {32, -5}} {
		if _, err := New(nil, bad[0], bad[1]); err == nil {
			t.Errorf("New accepted prefixes /%d, /%d", bad[0], bad[1])
		}
	}
}

// TestAbuse_F32_UntrustedForwardedForIsWarned: requests carrying
// X-Forwarded-For from a peer not in trusted_proxies (a proxy nobody
// listed, so all its clients share one budget) make one warning naming
// the peer, then at most one per UntrustedWarnEvery whatever the number of
// requests; trusted peers and requests without the header make none.
func TestAbuse_F32_UntrustedForwardedForIsWarned(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, JSONFormat: true})
	clk := clock.NewFake(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	c, err := New([]string{"10.0.0.1"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	c = c.WarnUntrusted(log, clk)
	lines := func() []string { return strings.Split(strings.TrimSpace(buf.String()), "\n") }

	c.Key(req("10.0.0.1:5000", "203.0.113.9")) // a trusted proxy
	c.Key(req("127.0.0.1:5000"))               // no header
	if buf.Len() != 0 {
		t.Fatalf("warned without cause: %s", buf.String())
	}
	for i := 0; i < 1000; i++ {
		if got := c.Key(req("127.0.0.1:5000", "203.0.113.9")); got != "127.0.0.1" {
			t.Fatalf("an untrusted peer's header was believed: %s", got)
		}
	}
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], `"@level":"warn"`) || !strings.Contains(l[0], `"peer":"127.0.0.1"`) || !strings.Contains(l[0], "server.trusted_proxies") {
		t.Fatalf("1000 requests from an unlisted proxy logged %d lines:\n%s", len(l), buf.String())
	}
	clk.Advance(UntrustedWarnEvery - time.Second)
	c.Key(req("192.0.2.1:5000", "203.0.113.9"))
	if len(lines()) != 1 {
		t.Fatalf("warned again before %s", UntrustedWarnEvery)
	}
	clk.Advance(time.Second)
	c.Key(req("192.0.2.1:5000", "203.0.113.9"))
	if l := lines(); len(l) != 2 || !strings.Contains(l[1], `"peer":"192.0.2.1"`) || !strings.Contains(l[1], `"requests_since_last_warning":1001`) {
		t.Fatalf("after %s: %s", UntrustedWarnEvery, buf.String())
	}
}
