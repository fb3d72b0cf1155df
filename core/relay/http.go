package relay

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/grasp-dev/grasp/core/githttp"
)

// CORS for every response (GRASP-01 C1-C3): one rule on every path under
// the base path and on NIP-05's well-known path, whatever the verb and the
// outcome. Access-Control-Allow-Methods always carries GET and POST (the
// spec's words: "on ALL responses"), and the allowed headers are the full
// set browser git clients send — Git-Protocol and friends, and
// X-Git-Request-Id (a retry id some browser git clients add; bindws and the
// field report list it) — so the allow list is wider than the spec minimum.
// The gate serves the websocket and NIP-11 is served here: no framework's
// CORS middleware comes between.
//
// git-receive-pack gets the same rule (issue 25 part 6, replacing the
// narrower one of audit F18a, which dropped GET and Git-Protocol from its
// answers and broke the spec's "all responses" and browser clients that send
// Git-Protocol on every request). Access-Control-Allow-Origin "*" on it
// grants a web page nothing its own server could not do: grasp sets no
// cookies and never sends Access-Control-Allow-Credentials, so a browser
// adds no ambient authority; a push's authority is a signed state event (or
// a NIP-98 token the page itself signed, GRASP-08); and what an anonymous
// push may cost is bounded by grasp.max_push_mb and the git process caps.
const (
	corsMethods = "GET, POST, OPTIONS"
	corsHeaders = "Content-Type, Git-Protocol, Authorization, Accept, Content-Encoding, X-Requested-With, X-Git-Request-Id"
)

// setCORS writes the one CORS rule on h.
func setCORS(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
}

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
	setCORS(h)
	if m := s.management(r, rest); m != nil {
		// Authenticated by its own NIP-98 token, and never refused by an
		// address block, so an operator can always lift one.
		m.ServeHTTP(w, r)
		return
	}
	if s.refusedAddr(r) {
		http.Error(w, "blocked: your address is blocked on this relay", http.StatusForbidden)
		return
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
	case githttp.Routed(rest):
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
