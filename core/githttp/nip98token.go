package githttp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

// Token signs the NIP-98 token a git client sends for a private
// repository (nip98.go says what the handler accepts): kind 27235 with `u`
// and `method`, dated at, by secret key sk (64 hex). It returns the base64
// of the event, the part after "Nostr " in the Authorization header (and
// the password of the HTTP Basic form). `grasp token` prints it for plain
// git and CI; it is valid for a minute either side of at.
func Token(sk, u, method string, at time.Time) (string, error) {
	evt := nostr.Event{Kind: kindHTTPAuth, CreatedAt: nostr.Timestamp(at.Unix()),
		Tags: nostr.Tags{{"u", u}, {"method", strings.ToUpper(method)}}}
	if err := evt.Sign(sk); err != nil {
		return "", fmt.Errorf("sign the token: %w", err)
	}
	b, err := json.Marshal(evt)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// CanonicalRepoURL is the `u` of a repository's token as ngit writes it:
// the repository URL without user info, query, fragment or trailing slash.
// It refuses anything but an absolute http(s) URL.
func CanonicalRepoURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) repository URL", raw)
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return u.String(), nil
}
