package relay

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
)

// CORS for every response (GRASP-01 C1-C3). Browser git clients send
// Git-Protocol and friends, and X-Git-Request-Id (a retry id some browser
// git clients add; bindws and the field report list it), so the allow list
// is wider than the spec minimum. The gate serves the websocket and NIP-11
// is served here, so khatru's own ServeHTTP (with its CORS middleware) is
// never called.
//
// The rule for git-receive-pack (audit F18a). It keeps
// Access-Control-Allow-Origin "*": gitworkshop pushes from the browser (a
// fetch POST with Content-Type application/x-git-receive-pack-request and
// Accept, which is preflighted and needs the header on the answer;
// src/lib/git-push.ts), and ngit-grasp serves it too. That grants a web page
// nothing its own server could not do: grasp sets no cookies and never sends
// Access-Control-Allow-Credentials, so a browser adds no ambient authority,
// a push's authority is a signed state event, and what an anonymous push
// may cost is bounded by grasp.max_push_mb and the git process caps. Its
// preflight allows exactly what browser pushers send: POST, and the
// headers Content-Type and Accept (gitworkshop), Authorization (a NIP-98
// token for a private repository, GRASP-08) and X-Git-Request-Id. Nothing
// else (no Git-Protocol: protocol v2 has no push; no Content-Encoding: no
// browser client compresses a pack).
const (
	corsMethods = "GET, POST, OPTIONS"
	corsHeaders = "Content-Type, Git-Protocol, Authorization, Accept, Content-Encoding, X-Requested-With, X-Git-Request-Id"

	receivePackMethods = "POST, OPTIONS"
	receivePackHeaders = "Content-Type, Accept, Authorization, X-Git-Request-Id"
)

// route is the HTTP contract of grasp.md §2: OPTIONS, websocket, git paths,
// NIP-11, pages, 404. Everything lives under the public URL's base path,
// stripped here and nowhere else; the rest of the origin is not ours.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	rest, ok := s.svc.Within(r.URL.EscapedPath())
	if !ok && r.URL.EscapedPath() == nip05Path {
		// NIP-05 resolves at the host's root, also for a service under a
		// base path (nip05.go).
		s.serveNIP05(w, r)
		return
	}
	if !ok {
		// Outside the base path: a reverse proxy's other sites. No CORS,
		// no page of ours.
		http.NotFound(w, r)
		return
	}
	r = withPath(r, rest)
	h.Set("Access-Control-Allow-Origin", "*")
	if strings.HasSuffix(rest, "/git-receive-pack") {
		h.Set("Access-Control-Allow-Methods", receivePackMethods)
		h.Set("Access-Control-Allow-Headers", receivePackHeaders)
	} else {
		h.Set("Access-Control-Allow-Methods", corsMethods)
		h.Set("Access-Control-Allow-Headers", corsHeaders)
	}

	s.gitMu.RLock()
	gitH, pages := s.git, s.pages
	s.gitMu.RUnlock()
	switch {
	case rest == nip05Path:
		s.serveNIP05(w, r)
	case r.Method == http.MethodOptions:
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
	case isWebsocket(r):
		s.gate.ServeHTTP(w, r)
	case git.Routed(rest):
		if gitH == nil {
			http.NotFound(w, r)
			return
		}
		gitH.ServeHTTP(w, r)
	case acceptsNostrJSON(r) || rest == nip11Path:
		s.serveNIP11(w, r)
	case pages != nil:
		pages.ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// nip11Path serves the NIP-11 document to a plain link (a browser cannot
// send Accept: application/nostr+json from an <a>); the landing page links
// it.
const nip11Path = "/nip11.json"

// withPath is r with its URL path replaced by the escaped path rest (the
// base path stripped); r itself when nothing changes.
func withPath(r *http.Request, rest string) *http.Request {
	if rest == r.URL.EscapedPath() {
		return r
	}
	path, err := url.PathUnescape(rest)
	if err != nil {
		path = rest
	}
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = path, rest
	r2.URL = &u
	return r2
}

func isWebsocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func acceptsNostrJSON(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			media, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(media), "application/nostr+json") {
				return true
			}
		}
	}
	return false
}
