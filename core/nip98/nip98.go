// Package nip98 owns NIP-98 HTTP authentication tokens (kind 27235): the
// one reading of a token from an Authorization header (VerifyHeader), used by
// the git handler for private repositories (GRASP-08) and by the NIP-86
// management endpoint, and the one signer of a token (Token) that
// `grasp token` prints for plain git and CI.
//
// It checks what a token is and says (kind, id, date, signature, and the
// caller's match of `u`, `method` and `payload`); it never decides who may
// read or manage anything: callers ask their own rules with the verified
// key.
package nip98

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

const (
	// KindHTTPAuth is the kind of a NIP-98 token event.
	KindHTTPAuth = 27235
	// Window is how far a token's created_at may be from now.
	Window = 60 * time.Second
	// MaxTokenBytes bounds the header decoded (an event with a few tags).
	MaxTokenBytes = 16 << 10
)

// VerifyHeader is the one reading of a NIP-98 token (kind 27235) in an
// Authorization header, "Nostr <base64>" or Basic with the base64 event as
// the password: a well-formed event with its id, created_at within a
// minute of now, then match's checks of what it must name (method, u,
// payload: they differ between git and NIP-86), then the signature, last
// because it is the dearest. It returns the event, or why it is refused.
// The git handler (core/githttp) and the NIP-86 endpoint (core/nip86)
// call it.
func VerifyHeader(header string, now time.Time, match func(evt *nostr.Event) error) (*nostr.Event, error) {
	raw, ok := tokenBytes(header)
	if !ok {
		return nil, errors.New("an Authorization: Nostr <base64 NIP-98 event> header is required")
	}
	var evt nostr.Event
	if err := evt.UnmarshalJSON(raw); err != nil || evt.Kind != KindHTTPAuth || !evt.CheckID() {
		return nil, errors.New("the Authorization token is not a NIP-98 event (kind 27235)")
	}
	if t := evt.CreatedAt.Time(); t.Before(now.Add(-Window)) || t.After(now.Add(Window)) {
		return nil, errors.New("the NIP-98 token is more than 60 seconds from now")
	}
	if err := match(&evt); err != nil {
		return nil, err
	}
	if ok, err := evt.CheckSignature(); err != nil || !ok {
		return nil, errors.New("the NIP-98 token's signature is invalid")
	}
	return &evt, nil
}

// tokenBytes decodes the event of an Authorization header: "Nostr
// <base64>", or Basic with the base64 event as the password.
func tokenBytes(header string) ([]byte, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(header), " ")
	token = strings.TrimSpace(token)
	if !found || len(token) > MaxTokenBytes*4/3+4 {
		return nil, false
	}
	switch {
	case strings.EqualFold(scheme, "Nostr"):
	case strings.EqualFold(scheme, "Basic"):
		cred, err := base64.StdEncoding.DecodeString(token)
		if err != nil {
			return nil, false
		}
		_, pass, ok := strings.Cut(string(cred), ":")
		if !ok {
			return nil, false
		}
		token = strings.TrimSpace(pass)
	default:
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(token, "=")); err != nil {
			return nil, false
		}
	}
	return raw, true
}

// Token signs a NIP-98 token: kind 27235 with `u` and `method`, and, when
// body is not nil, `payload` (the SHA-256 of the body, which the NIP-86
// endpoint requires), dated at, by secret key sk (64 hex). It returns the
// base64 of the event, the part after "Nostr " in the Authorization header
// (and the password of the HTTP Basic form). `grasp token` prints one for a
// private repository (core/githttp says what the git handler accepts) and
// `grasp admin` sends one with each NIP-86 call; it is valid for a minute
// either side of at.
func Token(sk, u, method string, body []byte, at time.Time) (string, error) {
	evt := nostr.Event{Kind: KindHTTPAuth, CreatedAt: nostr.Timestamp(at.Unix()),
		Tags: nostr.Tags{{"u", u}, {"method", strings.ToUpper(method)}}}
	if body != nil {
		sum := sha256.Sum256(body)
		evt.Tags = append(evt.Tags, nostr.Tag{"payload", hex.EncodeToString(sum[:])})
	}
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
