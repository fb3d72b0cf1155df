package relay

import (
	"encoding/json"
	"net/http"
)

// NIP-05 identity of the relay (issue 10 part 6): with relay.pubkey set,
// /.well-known/nostr.json names that key as "_", so the relay's key can be
// verified as _@<host> (ngit-grasp v3 serves the same; operators' tooling
// checks it). Without relay.pubkey the path is a 404.
//
// Where it is answered. NIP-05 looks a name up at the root of the host,
// https://<host>/.well-known/nostr.json, whatever path the service lives
// under. So the document is answered at two places:
//   - under the base path (<base>/.well-known/nostr.json), like every route
//     of the service, for a proxy that forwards only the base path and an
//     operator who points the root's well-known path at it;
//   - at the origin root, that one exact path only, when the service has a
//     base path: a reverse proxy configured to send /.well-known/nostr.json
//     to grasp gets the answer, and everything else outside the base path
//     stays a plain 404 (the root belongs to the proxy's other sites).
//
// At the root (no base path) the two are the same path.
//
// With ?path= the same document answers NIP-AD web addresses (nipad.go),
// with or without a relay key.
const nip05Path = "/.well-known/nostr.json"

// buildNIP05 is the document, or nil when the relay has no key.
func (s *Server) buildNIP05() ([]byte, error) {
	if s.opts.PubkeyHex == "" {
		return nil, nil
	}
	return json.Marshal(map[string]map[string]string{"names": {"_": s.opts.PubkeyHex}})
}

// serveNIP05 answers the well-known path with CORS (NIP-05: browser
// clients fetch it from other origins).
func (s *Server) serveNIP05(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setCORS(h)
	path, byPath := r.URL.Query()["path"]
	switch {
	case r.Method == http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case byPath:
		// NIP-AD (nipad.go): answered with or without a relay key.
		s.serveNIPAD(w, r, path[0])
	case s.nip05 == nil:
		http.NotFound(w, r)
	default:
		h.Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = w.Write(s.nip05)
		}
	}
}
