package hunt

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeResolver answers every name with addrs and records what it was
// asked: DNS rebinding is tested without DNS.
type fakeResolver struct {
	mu    sync.Mutex
	addrs []netip.Addr
	asked []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	return r.addrs, nil
}

func (r *fakeResolver) questions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// loopbackIsPublic lets the test's git server on loopback stand in for a
// public host, so the pinned path (not the private-address switch) is what
// is exercised.
func loopbackIsPublic(a netip.Addr) bool { return false }

// pinnedContext is a GitContext with the address guard on, resolving
// through r and treating loopback as public.
func (f *fixture) pinnedContext(r Resolver) *GitContext {
	return &GitContext{Repos: f.repos, Timeout: time.Minute, Resolver: r, internal: loopbackIsPublic}
}

// Audit F09a: the check resolved "rebind-a.example" (the dot trimmed) and
// pinned that name, but curl connected to "rebind-a.example.", which the pin
// does not match, and resolved it again (to 127.0.0.1 the second time).
// Both spellings must now reach the checked address only. The host here is
// under .invalid, which no resolver answers: a fetch can only succeed if
// curl used the pin, so success proves curl did not resolve on its own.
func TestAbuse_F09a_TrailingDotHostIsPinnedAsCurlSpellsIt(t *testing.T) {
	f := newFixture(t)
	srv := serveGit(t, f.rootA, 0)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	for i, host := range []string{"rebind-a.invalid.", "rebind-a.invalid", "REBIND-A.Invalid."} {
		id := "r" + string(rune('0'+i))
		f.localRepo(t, id)
		res := &fakeResolver{addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
		gc := f.pinnedContext(res)
		url := "http://" + host + ":" + port + "/r.git"
		got, err := gc.Fetch(context.Background(), repoN(id), url, []string{f.c2})
		if err != nil || len(got) != 1 {
			t.Errorf("%s: fetch through the pin: %v %v (curl resolved the name itself)", host, got, err)
		}
		if q := res.questions(); len(q) != 1 || q[0] != "rebind-a.invalid" {
			t.Errorf("%s: the check resolved %q, want exactly the name curl connects to, once", host, q)
		}
	}
}

// Audit F09b: "0x7f000001" is a DNS name to Go (a resolver that answers it
// passed the check) but 127.0.0.1 to curl, which connected to the canary.
// Every numeric form curl reads as an address other than Go does is refused
// before anything is resolved or contacted.
func TestAbuse_F09b_NumericHostFormsCurlReadsAsAddresses(t *testing.T) {
	f := newFixture(t)
	canary := serveGit(t, f.rootA, 0)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(canary.URL, "http://"))
	f.localRepo(t, "r")
	// the resolver calls every name public, as a hijacking resolver would
	res := &fakeResolver{addrs: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}
	gc := &GitContext{Repos: f.repos, Timeout: time.Minute, Resolver: res}
	for _, host := range []string{
		"0x7f000001", "0X7F000001", "2130706433", "017700000001", "127.1", "127.0.1",
		"0177.0.0.1", "0x7f.0.0.1", "0x7f.1", "127.0.0.01", "0", "0x", "127.0.0.1.",
	} {
		url := "http://" + host + ":" + port + "/r.git"
		_, err := gc.Fetch(context.Background(), repoN("r"), url, []string{f.c2})
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Kind != KindRefused {
			t.Errorf("%s: %v, want refused", host, err)
		}
	}
	if q := res.questions(); len(q) != 0 {
		t.Errorf("numeric hosts were resolved as names: %q", q)
	}
	if n := canary.total.Load(); n != 0 {
		t.Fatalf("the canary on 127.0.0.1 saw %d requests", n)
	}
	// the canonical dotted quad is an address to both, and is checked as one
	_, err := gc.Fetch(context.Background(), repoN("r"), "http://127.0.0.1:"+port+"/r.git", []string{f.c2})
	if KindOf(err) != KindRefused || canary.total.Load() != 0 {
		t.Fatalf("127.0.0.1: %v, want refused without a request", err)
	}
}

// Audit F09 addendum: the pin handed to curl for an IPv6-literal host
// ("::1:port:[::1]") is an entry curl 7.88 cannot parse, so git failed and
// no IPv6-literal source could be fetched at all. A literal needs no pin.
// Both with the address guard on (loopback standing in for a public
// address) and with the private-address switch on, a fetch from a git server
// on [::1] works.
func TestAbuse_F09_IPv6LiteralSourceIsFetched(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatalf("IPv6 loopback is required: %v", err)
	}
	v4 := serveGit(t, f.rootA, 0)
	srv := httptest.NewUnstartedServer(v4.Config.Handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	url := srv.URL + "/r.git"
	if !strings.HasPrefix(url, "http://[::1]:") {
		t.Fatalf("server URL %s", url)
	}
	res := &fakeResolver{}
	for name, gc := range map[string]*GitContext{
		"guarded": f.pinnedContext(res),
		"private": {Repos: f.repos, Timeout: time.Minute, AllowPrivate: true},
	} {
		f.localRepo(t, name)
		got, err := gc.Fetch(context.Background(), repoN(name), url, []string{f.c2})
		if err != nil || len(got) != 1 {
			t.Errorf("%s: fetch from %s: %v %v", name, url, got, err)
		}
	}
	if q := res.questions(); len(q) != 0 {
		t.Errorf("an address literal was resolved: %q", q)
	}
	// and the guard still refuses the literal when it is internal
	gc := &GitContext{Repos: f.repos, Timeout: time.Minute, Resolver: res}
	if _, err := gc.Fetch(context.Background(), repoN("guarded"), url, []string{f.c3}); KindOf(err) != KindRefused {
		t.Fatalf("[::1] with the guard on: %v, want refused", err)
	}
}
