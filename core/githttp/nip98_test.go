package githttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/clock"
	"github.com/grasp-dev/grasp/core/nip34"
)

// onlyReader makes every repository private to one key.
type onlyReader string

func (o onlyReader) RepoReaders(context.Context, nip34.RepoRef) func(string) bool {
	return func(pk string) bool { return pk == string(o) }
}

// G08-3: the NIP-98 token of a private repository's git requests: kind
// 27235, `u` the repository root URL, `method` GET, created_at within 60 s
// of the handler's clock (a fake one: the window is exact), a valid
// signature; std or URL-safe base64. Anything else is an empty 401 with
// WWW-Authenticate; a valid token of another key is 403; the reader's is
// served (positive control) on every request of the repository.
func TestG08_3_NIP98TokenChecks(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	ts := newTestServerOn(t, Options{Private: onlyReader(pk)}, clock.NewFake(now))
	_, url := ts.newRepo("vault")
	token := func(k string, kind int, u, method string, at time.Time, enc *base64.Encoding) string {
		evt := nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at.Unix()), Tags: nostr.Tags{{"u", u}, {"method", method}}}
		if err := evt.Sign(k); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(evt)
		return "Nostr " + enc.EncodeToString(b)
	}
	get := func(path, auth string) (int, http.Header, int) {
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, _ := resp.Body.Read(make([]byte, 1))
		return resp.StatusCode, resp.Header, n
	}
	std, urlsafe := base64.StdEncoding, base64.RawURLEncoding
	const refs = "/info/refs?service=git-upload-pack"
	for name, auth := range map[string]string{
		"no header":                "",
		"other scheme":             "Bearer x",
		"not base64":               "Nostr !!!",
		"wrong kind":               token(sk, 1, url, "GET", now, std),
		"another repo":             token(sk, 27235, url+"x", "GET", now, std),
		"method POST":              token(sk, 27235, url, "POST", now, std),
		"61 s old":                 token(sk, 27235, url, "GET", now.Add(-61*time.Second), std),
		"61 s ahead":               token(sk, 27235, url, "GET", now.Add(61*time.Second), std),
		"tampered id":              "Nostr " + std.EncodeToString([]byte(`{"kind":27235}`)),
		"request URL with POST":    token(sk, 27235, url+refs, "POST", now, std),
		"request URL, other query": token(sk, 27235, url+"/info/refs?service=git-receive-pack", "GET", now, std),
		"root URL with a query":    token(sk, 27235, url+"?x=1", "GET", now, std),
	} {
		code, h, n := get(refs, auth)
		if code != 401 || h.Get("WWW-Authenticate") != `Nostr method="GET"` || n != 0 {
			t.Errorf("%s: %d %q body %d bytes, want an empty 401 with WWW-Authenticate", name, code, h.Get("WWW-Authenticate"), n)
		}
	}
	if code, _, _ := get(refs, token(nostr.GeneratePrivateKey(), 27235, url, "GET", now, std)); code != 403 {
		t.Errorf("another key's valid token: %d, want 403", code)
	}
	for name, auth := range map[string]string{
		"60 s old":            token(sk, 27235, url, "GET", now.Add(-60*time.Second), std),
		"60 s ahead":          token(sk, 27235, url, "GET", now.Add(60*time.Second), std),
		"url-safe base64":     token(sk, 27235, url, "GET", now, urlsafe),
		"trailing slash on u": token(sk, 27235, url+"/", "get", now, std),
		"per-request token":   token(sk, 27235, url+refs, "GET", now, std),
		"HTTP Basic":          "Basic " + std.EncodeToString([]byte("nostr:"+token(sk, 27235, url, "GET", now, std)[len("Nostr "):])),
	} {
		if code, _, _ := get(refs, auth); code != 200 {
			t.Errorf("%s: %d, want 200", name, code)
		}
	}
}
