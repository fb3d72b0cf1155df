package githttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/nip98"
)

// Private is GRASP-08's reader rule as the git handler asks it
// (core/visibility implements it).
type Private interface {
	// RepoReaders is who may read repo: nil admits everyone, else a
	// function answering for an authenticated pubkey.
	RepoReaders(ctx context.Context, repo nip34.RepoRef) func(pubkey string) bool
}

// GRASP-08 on git: every smart-HTTP request for a private repository
// (a /prs/ one too, F27) carries a NIP-98 token, a kind-27235 event signed
// by a reader and dated within a minute, in one of two shapes:
//
//   - the repository's token (ngit's contract): `u` the repository's
//     canonical root URL (<public_url>/<npub>/<d>.git) and `method` GET,
//     whatever the request; one token serves the GET and the POSTs of one
//     clone, fetch or push (git sends one extraHeader with each);
//   - a per-request token (credential helpers that sign each request):
//     `u` the request's exact URL (query included) and `method` its method.
//
// It comes as "Authorization: Nostr <base64 event>", or, for a stock git
// whose credential helper can only answer a user name and password, as
// HTTP Basic with the base64 event as the password (any user name). Repeats
// are allowed and `payload` is ignored. A request without a valid token
// gets an empty 401 with `WWW-Authenticate: Nostr method="GET"` (and a
// Basic challenge, which is what makes stock git ask its credential
// helper); a valid token of a key that may not read the repository gets
// 403. A push still needs the state authorisation on top.
//
// git's credential probe is answered without a token: before a push
// larger than http.postBuffer, git POSTs exactly "0000" (an empty
// receive-pack request) to find out whether it must authenticate, and a
// 401 to it aborts a push through a helper that signs per request. That
// exact request, and only it, gets a constant empty 200 before any
// repository is looked up (no existence oracle), and nothing runs.

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
func (h *handler) authorizeRead(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef) bool {
	who := h.readers(r, repo)
	if who == nil {
		return true
	}
	pk, ok := h.nip98Pubkey(r, repo)
	if !ok {
		h.m.ops.WithLabelValues("auth", "missing").Inc()
		w.Header().Set("WWW-Authenticate", `Nostr method="GET"`)
		w.Header().Add("WWW-Authenticate", `Basic realm="grasp NIP-98: the password is a base64 kind-27235 event (grasp token)"`)
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

// authProbe reports whether r is git's credential probe for a push: a
// POST to git-receive-pack without credentials whose body is exactly the
// flush packet "0000" (Content-Length 4, no chunking, git's content type).
// It reads the body only when the headers match, and puts back what it
// read when the body is something else.
func authProbe(r *http.Request, sub string) bool {
	if sub != svcReceive || r.Method != http.MethodPost || r.Header.Get("Authorization") != "" ||
		r.ContentLength != 4 || len(r.TransferEncoding) > 0 || r.Header.Get("Content-Encoding") != "" ||
		r.Header.Get("Content-Type") != "application/x-git-receive-pack-request" {
		return false
	}
	buf := make([]byte, 5)
	n, _ := io.ReadFull(r.Body, buf)
	if n == 4 && string(buf[:4]) == string(pktFlush) {
		return true
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf[:n]), r.Body))
	return false
}

// answerProbe answers git's credential probe: an empty receive-pack
// result, the same for every path.
func (h *handler) answerProbe(w http.ResponseWriter) {
	h.m.ops.WithLabelValues("auth", "probe").Inc()
	noCache(w)
	w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
	w.WriteHeader(http.StatusOK)
}

// nip98Pubkey returns the author of the request's valid NIP-98 token for
// repo (see above for the two shapes and two headers).
func (h *handler) nip98Pubkey(r *http.Request, repo nip34.RepoRef) (string, bool) {
	evt, err := nip98.VerifyHeader(r.Header.Get("Authorization"), h.clk.Now(), func(evt *nostr.Event) error {
		m, u := evt.Tags.Find("method"), evt.Tags.Find("u")
		if m == nil || u == nil {
			return errors.New("the NIP-98 token names no method or u")
		}
		for _, base := range h.baseURLs(r) {
			switch {
			case strings.EqualFold(m[1], http.MethodGet) && sameRepoURL(u[1], base+repo.URLPath()):
				// the repository's token, for every request of it
				return nil
			case strings.EqualFold(m[1], r.Method) && sameRequestURL(u[1], base+r.URL.EscapedPath(), r.URL.Query()):
				// a per-request token
				return nil
			}
		}
		return errors.New("the NIP-98 token's u and method do not name this request")
	})
	if err != nil {
		return "", false
	}
	return evt.PubKey, true
}

// baseURL is the service's public URL, base path included (the handler
// sees paths with it stripped), or the request's own scheme and host.
func (h *handler) baseURL(r *http.Request) string {
	if h.opts.Service.Host != "" {
		return strings.TrimSuffix(h.opts.Service.BaseURL(), "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// baseURLs are the public URLs a token's u may be under: the service's,
// and each of its aliases (a .onion: issue 25 part 5).
func (h *handler) baseURLs(r *http.Request) []string {
	out := []string{h.baseURL(r)}
	for _, a := range h.opts.Service.Aliases {
		out = append(out, strings.TrimSuffix(a.BaseURL(), "/"))
	}
	return out
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

// sameRequestURL compares a token's u with the request's URL: scheme and
// host ignoring case, the decoded path exactly, the same query parameters.
func sameRequestURL(u, want string, query url.Values) bool {
	ua, err := url.Parse(strings.TrimSpace(u))
	if err != nil || ua.Fragment != "" {
		return false
	}
	uw, err := url.Parse(want)
	if err != nil {
		return false
	}
	return strings.EqualFold(ua.Scheme, uw.Scheme) && strings.EqualFold(ua.Host, uw.Host) &&
		ua.Path == uw.Path && reflect.DeepEqual(ua.Query(), query)
}
