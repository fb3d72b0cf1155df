package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/config"
	"github.com/grasp-dev/grasp/core/nip34"
)

// nipadLookup resolves a NIP-AD web address the way ngit does
// (src/lib/nip_ad.rs): GET <origin>/.well-known/nostr.json?path=<path> at
// the origin's root, take the entry for exactly that path, require a filter
// naming one author, kind 30617 only and one #d, and return the
// coordinate's filter and the relay hints; ok is false when the document
// has no mapping for the path.
func nipadLookup(t *testing.T, origin, path string) (f nostr.Filter, relays []string, ok bool) {
	t.Helper()
	u := origin + "/.well-known/nostr.json?" + url.Values{"path": {path}}.Encode()
	status, h, body := httpGet(t, u)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, status, body)
	}
	if h.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET %s: no CORS", u)
	}
	if len(body) > 256<<10 {
		t.Fatalf("NIP-AD document of %d bytes exceeds ngit's 256 KiB", len(body))
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("NIP-AD document is not JSON: %v\n%s", err, body)
	}
	raw, found := doc[path]
	if !found {
		return nostr.Filter{}, nil, false
	}
	var entry struct {
		Filter nostr.Filter `json:"filter"`
		Relays []string     `json:"relays"`
	}
	if err := json.Unmarshal(raw, &entry); err != nil {
		t.Fatalf("invalid NIP-AD mapping for %s: %v", path, err)
	}
	f = entry.Filter
	if len(f.Authors) != 1 || !slices.Equal(f.Kinds, []int{nip34.KindAnnouncement}) || len(f.Tags["d"]) != 1 || f.Tags["d"][0] == "" {
		t.Fatalf("NIP-AD filter for %s is not one repository coordinate: %+v", path, f)
	}
	for _, r := range entry.Relays {
		if _, err := nip34.NormalizeRelayURL(r); err != nil {
			t.Fatalf("invalid relay hint %q: %v", r, err)
		}
	}
	return f, entry.Relays, true
}

// Issue 25 part 4 (NIP-AD, nips#2406): a repository's browser URL — the
// clone path or a page below it, base path included — resolves,
// as ngit resolves it (fetch the well-known document, then REQ the
// returned filter at the returned relay), to the repository's
// announcement; the document carries NIP-05's names too. Paths naming
// nothing, a repository not hosted here or a private one have no mapping.
func TestNIPAD_RepositoryWebAddressResolvesToItsAnnouncement(t *testing.T) {
	op := newKey(t)
	var base string
	e := newEnv(t, func(c *config.Config) {
		offerPrivate(c)
		c.Relay.Pubkey = op.PK
		c.Server.PublicURL += "/git"
		base = c.Server.PublicURL
	})
	a := newKey(t)
	w := newWork(t)
	ann := e.release(a, "my repo", w, w.commit("x"))
	origin := strings.TrimSuffix(base, "/git")
	repoPath := "/git/" + a.Npub + "/my%20repo.git"
	decoded, _ := url.PathUnescape(repoPath)

	for _, path := range []string{repoPath, decoded, decoded + "/tree/main"} {
		f, relays, ok := nipadLookup(t, origin, path)
		if !ok {
			t.Fatalf("no NIP-AD mapping for %s", path)
		}
		if f.Authors[0] != a.PK || f.Tags["d"][0] != "my repo" {
			t.Fatalf("mapping for %s names %s/%s", path, f.Authors[0], f.Tags["d"][0])
		}
		if len(relays) == 0 || relays[0] != e.ws {
			t.Fatalf("relay hints for %s = %q, want %s first", path, relays, e.ws)
		}
		// ngit's next step: the returned filter at the returned relay.
		got := e.dial().query(f)
		if len(got) != 1 || got[0].ID != ann.ID {
			t.Fatalf("REQ %+v at %s returned %d events, want the announcement", f, relays[0], len(got))
		}
	}
	// Also answered under the base path, and the names are there.
	_, _, body := httpGet(t, base+"/.well-known/nostr.json?path="+url.QueryEscape(decoded))
	if !strings.Contains(body, `"names":{"_":"`+op.PK+`"}`) || !strings.Contains(body, a.PK) {
		t.Fatalf("the document under the base path: %s", body)
	}

	// No mapping: another path, another owner's identifier, a malformed
	// path, a private repository (its existence is not told).
	p := e.releasePrivate(newKey(t), "secret")
	for _, path := range []string{
		"/git/" + a.Npub + "/other.git",
		"/git/" + newKey(t).Npub + "/my%20repo.git",
		"/git/not-a-repo",
		"git/" + a.Npub + "/my%20repo.git",
		"/elsewhere/" + a.Npub + "/my%20repo.git",
		strings.TrimPrefix(decoded, "/git"), // outside the base path

		"/git/" + p.owner.Npub + "/secret.git",
	} {
		if _, _, ok := nipadLookup(t, origin, path); ok {
			t.Errorf("NIP-AD mapped %s", path)
		}
	}
}
