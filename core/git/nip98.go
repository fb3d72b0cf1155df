package git

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Private is GRASP-08's reader rule as the git handler asks it
// (core/visibility implements it).
type Private interface {
	// RepoReaders is who may read repo: nil admits everyone, else a
	// function answering for an authenticated pubkey.
	RepoReaders(ctx context.Context, repo nip34.RepoRef) func(pubkey string) bool
}

// GRASP-08 on git: every smart-HTTP request for a private repository
// carries "Authorization: Nostr <base64 of a kind-27235 event>" (NIP-98)
// whose `u` is the repository's root URL and `method` GET, dated within a
// minute. The same token serves the GET and the POST of one clone, fetch or
// push (git sends one extraHeader with both), repeats are allowed and
// `payload` is ignored. A request without a valid token gets an empty 401
// with `WWW-Authenticate: Nostr method="GET"`; a valid token of a key that
// may not read the repository gets 403. A push still needs the state
// authorisation on top.

const (
	kindHTTPAuth = 27235
	// nip98Window is how far a token's created_at may be from now.
	nip98Window = 60 * time.Second
	// maxTokenBytes bounds the header decoded (an event with a few tags).
	maxTokenBytes = 16 << 10
)

// readers is who may read repo (nil: everyone).
func (h *handler) readers(r *http.Request, repo nip34.RepoRef) func(string) bool {
	if h.opts.Private == nil {
		return nil
	}
	return h.opts.Private.RepoReaders(r.Context(), repo)
}

// authorizeRead lets a request for repo through when the repository is
// public or the request's NIP-98 token is a reader's; otherwise it answers
// the request (401 or 403) and reports false.
func (h *handler) authorizeRead(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, owner, id string) bool {
	who := h.readers(r, repo)
	if who == nil {
		return true
	}
	pk, ok := h.nip98Pubkey(r, owner, id)
	if !ok {
		h.m.ops.WithLabelValues("auth", "missing").Inc()
		w.Header().Set("WWW-Authenticate", `Nostr method="GET"`)
		w.WriteHeader(http.StatusUnauthorized)
		return false
	}
	if !who(pk) {
		h.m.ops.WithLabelValues("auth", "restricted").Inc()
		http.Error(w, "restricted: this repository is private and your key is not a member", http.StatusForbidden)
		return false
	}
	return true
}

// nip98Pubkey returns the author of the request's valid NIP-98 token for
// the repository at /<owner>/<id>.git.
func (h *handler) nip98Pubkey(r *http.Request, owner, id string) (string, bool) {
	scheme, token, found := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !found || !strings.EqualFold(scheme, "Nostr") || len(token) > maxTokenBytes*4/3+4 {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token))
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(strings.TrimSpace(token), "=")); err != nil {
			return "", false
		}
	}
	var evt nostr.Event
	if err := evt.UnmarshalJSON(raw); err != nil {
		return "", false
	}
	if evt.Kind != kindHTTPAuth || !evt.CheckID() {
		return "", false
	}
	now := h.clk.Now()
	if t := evt.CreatedAt.Time(); t.Before(now.Add(-nip98Window)) || t.After(now.Add(nip98Window)) {
		return "", false
	}
	if m := evt.Tags.Find("method"); m == nil || !strings.EqualFold(m[1], http.MethodGet) {
		return "", false
	}
	u := evt.Tags.Find("u")
	if u == nil || !h.namesRepoRoot(r, u[1], owner, id) {
		return "", false
	}
	if ok, err := evt.CheckSignature(); err != nil || !ok {
		return "", false
	}
	return evt.PubKey, true
}

// namesRepoRoot reports whether a token's u names the repository's root
// under the service's public URL or one of its aliases (a .onion: issue 25
// part 5).
func (h *handler) namesRepoRoot(r *http.Request, u, owner, id string) bool {
	if sameRepoURL(u, h.repoRootURL(r, owner, id)) {
		return true
	}
	for _, a := range h.opts.Service.Aliases {
		if sameRepoURL(u, strings.TrimSuffix(a.BaseURL(), "/")+RepoURLPath(owner, id)) {
			return true
		}
	}
	return false
}

// repoRootURL is the repository's canonical root URL, its clone URL under
// the service's public URL (base path included: the handler sees paths with
// it stripped).
func (h *handler) repoRootURL(r *http.Request, owner, id string) string {
	var base string
	if h.opts.Service.Host != "" {
		base = h.opts.Service.BaseURL()
	} else {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return strings.TrimSuffix(base, "/") + RepoURLPath(owner, id)
}

// sameRepoURL compares two repository URLs by scheme and host (ignoring
// case) and decoded path (ignoring a trailing slash), so "%20" and a
// client's own escaping of the identifier are the same.
func sameRepoURL(a, b string) bool {
	ua, err := url.Parse(strings.TrimSpace(a))
	if err != nil {
		return false
	}
	ub, err := url.Parse(strings.TrimSpace(b))
	if err != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/") && ua.RawQuery == "" && ua.Fragment == ""
}
