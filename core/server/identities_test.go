package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip42"

	"github.com/grasp-dev/grasp/core/config"
)

// onionHost is a .onion name this test server answers for (nothing
// resolves it; requests reach the server on 127.0.0.1 either way).
const onionHost = "nkkkrgkv3pov3hibjo7kjnc7raslwaqqvmvtzqy2mbsa7liqov6l5qid.onion"

// newIdentitiesEnv is a server whose public_url lists three identities:
// its loopback URL, a .onion in the http:// form ngit writes for onion
// hosts, and a base-path alias on the same origin (/alias).
func newIdentitiesEnv(t *testing.T, mutate func(c *config.Config)) *testServer {
	t.Helper()
	return newSyncEnv(t, func(c *config.Config) {
		c.Server.PublicURLAliases = []string{"http://" + onionHost, c.Server.PublicURL + "/alias"}
		if mutate != nil {
			mutate(c)
		}
	})
}

// Issue 25 part 5: every URL public_url lists is this service. An
// announcement naming only the .onion URLs, or only the base-path alias,
// lists this service (a bare repository, pushes authorised as usual); a
// repository is cloned under the alias's base path; NIP-11, the landing
// page and the repository page show every URL; NIP-42 AUTH naming the
// .onion relay is accepted; and sync never dials any of them (no
// self-sync), while it does dial a real relay the same announcement lists.
func TestServiceIdentities_EveryPublicURLIsThisServer(t *testing.T) {
	peer := newKhatruPeer(t, khatruOpts{negentropy: true})
	e := newIdentitiesEnv(t, nil)
	cl := e.dial()
	onion, alias := "http://"+onionHost, e.base+"/alias"
	a, b := newKey(t), newKey(t)
	w := newWork(t)
	x := w.commit("x")

	// Only the .onion identity, with ngit's http:// and ws:// forms.
	annA := e.sign(a, 30617, nostr.Tags{{"d", "repo"}, {"clone", onion + "/" + a.Npub + "/repo.git"},
		{"relays", "ws://" + onionHost, peer.url}}, "")
	cl.mustAccept(annA, purg)
	cl.mustAccept(e.state(a, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	if out, err := w.push(e.cloneURL(a, "repo"), "main:refs/heads/main"); err != nil {
		t.Fatalf("push to a repository announced at the .onion URL: %v\n%s", err, out)
	}
	e.eventually("A's announcement served", 0, func() bool { return cl.served(annA.ID) })

	// Only the base-path alias; cloned through it.
	annB := e.sign(b, 30617, nostr.Tags{{"d", "repo"}, {"clone", alias + "/" + b.Npub + "/repo.git"},
		{"relays", "ws://" + strings.TrimPrefix(alias, "http://")}}, "")
	cl.mustAccept(annB, purg)
	cl.mustAccept(e.state(b, "repo", map[string]string{"refs/heads/main": x}, "refs/heads/main"), purg)
	if out, err := w.push(alias+"/"+b.Npub+"/repo.git", "main:refs/heads/main"); err != nil {
		t.Fatalf("push under the base-path alias: %v\n%s", err, out)
	}
	if refs := lsRemote(t, alias+"/"+b.Npub+"/repo.git"); refs["refs/heads/main"] != x {
		t.Fatalf("ls-remote under the alias: %v", refs)
	}

	// A look-alike of the onion name is not this service.
	cl.mustReject(e.sign(newKey(t), 30617, nostr.Tags{{"d", "repo"}, {"clone", "http://x" + onionHost + "/a/repo.git"},
		{"relays", "ws://x" + onionHost}}, ""), "invalid: announcement must list this service")

	// NIP-11 lists every identity.
	var doc struct {
		PublicURLs []string `json:"public_urls"`
		RelayURLs  []string `json:"relay_urls"`
	}
	e.nip11Into(&doc)
	if want := []string{e.base, onion, alias}; !slices.Equal(doc.PublicURLs, want) {
		t.Errorf("NIP-11 public_urls = %q, want %q", doc.PublicURLs, want)
	}
	if want := []string{e.ws, "ws://" + onionHost, e.ws + "/alias"}; !slices.Equal(doc.RelayURLs, want) {
		t.Errorf("NIP-11 relay_urls = %q, want %q", doc.RelayURLs, want)
	}
	// The pages show them: the landing page every relay URL, the
	// repository page every clone URL.
	_, _, landing := httpGet(t, e.base+"/", "Accept", "text/html")
	for _, u := range doc.RelayURLs {
		if !strings.Contains(landing, u) {
			t.Errorf("the landing page does not show relay URL %s", u)
		}
	}
	_, _, page := httpGet(t, e.cloneURL(a, "repo"), "Accept", "text/html")
	for _, base := range doc.PublicURLs {
		if u := base + "/" + a.Npub + "/repo.git"; !strings.Contains(page, u) {
			t.Errorf("the repository page does not show clone URL %s", u)
		}
	}

	// NIP-42: an AUTH naming the .onion relay names this relay.
	ac := e.dial()
	ac.send("EVENT", e.sign(a, 30617, nostr.Tags{{"d", "secret"}, {"private", "true"},
		{"clone", e.cloneURL(a, "secret")}, {"relays", e.ws}}, ""))
	m := ac.next(func(m []json.RawMessage) bool { return label(m) == "AUTH" })
	auth := nip42.CreateUnsignedAuthEvent(str(m[1]), a.PK, "ws://"+onionHost)
	if err := auth.Sign(a.SK); err != nil {
		t.Fatal(err)
	}
	ac.send("AUTH", auth)
	ok := ac.next(func(m []json.RawMessage) bool { return label(m) == "OK" && str(m[1]) == auth.ID })
	var accepted bool
	json.Unmarshal(ok[2], &accepted)
	if !accepted {
		t.Fatalf("AUTH naming the .onion relay refused: %s", ok[3])
	}

	// GRASP-02: the real relay is synced, none of this server's URLs is.
	e.eventually("the listed peer relay connected", syncStep, func() bool { return e.relayUp(peer.url) })
	e.eventually("sync idle", syncStep, func() bool { return e.metric("grasp_sync_pending_batches", "") == 0 })
	for _, self := range []string{"ws://" + onionHost, e.ws + "/alias", e.ws} {
		if snap := relaySnapshot(e.srv, self); snap.URL != "" {
			t.Errorf("sync tracks this server's own URL %s (%v)", self, snap.Status)
		}
	}
}
