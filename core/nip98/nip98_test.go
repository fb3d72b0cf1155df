package nip98

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/internal/testkit"
)

// TestG08_3_TokenRoundTrip: what Token signs, VerifyHeader reads back in both of
// its header shapes; a stale token, another kind, a broken signature, a
// refused match and an oversized header are refused with a reason.
func TestG08_3_TokenRoundTrip(t *testing.T) {
	k := testkit.NewKey(t)
	now := time.Unix(1_800_000_000, 0)
	const u = "https://git.example.com/npub1x/vault.git"
	tok, err := Token(k.SK, u, "get", nil, now)
	if err != nil {
		t.Fatal(err)
	}
	wantU := func(evt *nostr.Event) error {
		if evt.Tags.FindWithValue("u", u) == nil || evt.Tags.FindWithValue("method", "GET") == nil {
			return errors.New("wrong u or method")
		}
		return nil
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:"+tok))
	for _, h := range []string{"Nostr " + tok, basic} {
		evt, err := VerifyHeader(h, now.Add(30*time.Second), wantU)
		if err != nil || evt.PubKey != k.PK {
			t.Fatalf("VerifyHeader(%.12s…) = %v, %v; want the signer's event", h, evt, err)
		}
	}

	// with a body, the token carries its SHA-256 as `payload` (NIP-86)
	body := []byte(`{"method":"supportedmethods","params":[]}`)
	post, err := Token(k.SK, u, "post", body, now)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	evt, err := VerifyHeader("Nostr "+post, now, func(evt *nostr.Event) error {
		if evt.Tags.FindWithValue("payload", hex.EncodeToString(sum[:])) == nil || evt.Tags.FindWithValue("method", "POST") == nil {
			return errors.New("wrong payload or method")
		}
		return nil
	})
	if err != nil || evt.PubKey != k.PK {
		t.Fatalf("a token with a body: %v, %v", evt, err)
	}

	refused := map[string]struct {
		header string
		at     time.Time
		match  func(*nostr.Event) error
	}{
		"no header":       {"", now, wantU},
		"stale":           {"Nostr " + tok, now.Add(Window + time.Second), wantU},
		"match refuses":   {"Nostr " + tok, now, func(*nostr.Event) error { return errors.New("not this URL") }},
		"another kind":    {"Nostr " + signed(t, k, 1, now), now, func(*nostr.Event) error { return nil }},
		"bad signature":   {"Nostr " + tampered(t, tok), now, func(*nostr.Event) error { return nil }},
		"oversized":       {"Nostr " + strings.Repeat("A", MaxTokenBytes*2), now, wantU},
		"unknown scheme":  {"Bearer " + tok, now, wantU},
		"basic, no colon": {"Basic " + base64.StdEncoding.EncodeToString([]byte(tok)), now, wantU},
	}
	for name, c := range refused {
		if evt, err := VerifyHeader(c.header, c.at, c.match); err == nil {
			t.Errorf("%s: VerifyHeader accepted %v", name, evt)
		}
	}
}

func signed(t *testing.T, k testkit.Key, kind int, at time.Time) string {
	evt := k.Event(t, kind, nostr.Timestamp(at.Unix()), nil, "")
	b, err := evt.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// tampered changes a tag of tok's event and recomputes its id, so only the
// signature is wrong.
func tampered(t *testing.T, tok string) string {
	raw, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	var evt nostr.Event
	if err := evt.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	evt.Tags = append(evt.Tags, nostr.Tag{"payload", "00"})
	evt.ID = evt.GetID()
	b, _ := evt.MarshalJSON()
	return base64.StdEncoding.EncodeToString(b)
}

func TestCanonicalRepoURL(t *testing.T) {
	got, err := CanonicalRepoURL("https://user@git.example.com/npub1x/vault.git/?x=1#f")
	if err != nil || got != "https://git.example.com/npub1x/vault.git" {
		t.Fatalf("CanonicalRepoURL = %q, %v", got, err)
	}
	if _, err := CanonicalRepoURL("ftp://git.example.com/x.git"); err == nil {
		t.Fatal("an ftp URL was taken for a repository URL")
	}
}
