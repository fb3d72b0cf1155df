package relay

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// NIP-AD web addresses (nips#2406; issue 25 part 4): the well-known
// nostr.json document also answers ?path=<pathname> with a Nostr filter and
// relay hints for the resource a web URL names. For a repository page or
// clone URL here, <base path>/<npub>/<d>.git or a page below it such as
// <base path>/<npub>/<d>.git/tree/main (the browser's pathname), the filter is the one
// coordinate ngit accepts (exactly one author, kind 30617 only, one #d:
// ngit's nip_ad.rs) and the relays are this service's relay URLs, so a
// browser URL and the nostr:// address resolve to the same announcement.
//
// Only repositories the pages show (hosted and listed: pages.Shown, which
// asks GRASP-08's reader rule) are answered; for anything else the
// document simply has no entry for the path, which ngit reports as "no
// mapping" — the same answer as for a path that names nothing, so a
// private repository's existence is not told.

// maxNIPADPath bounds the path a request may ask about.
const maxNIPADPath = 2048

// nipadEntry is one path's mapping.
type nipadEntry struct {
	Filter nipadFilter `json:"filter"`
	Relays []string    `json:"relays,omitempty"`
}

type nipadFilter struct {
	Kinds   []int    `json:"kinds"`
	Authors []string `json:"authors"`
	D       []string `json:"#d"`
	Limit   int      `json:"limit"`
}

// HandleRepoAddresses sets which repositories NIP-AD answers for (the
// pages' Shown); until it is set, none.
func (s *Server) HandleRepoAddresses(shown func(context.Context, nip34.RepoRef) bool) {
	s.gitMu.Lock()
	s.shown = shown
	s.gitMu.Unlock()
}

// nipadDocument is the well-known document for a request carrying ?path=:
// NIP-05's names (when the relay has a key) and the path's mapping when it
// names a repository shown here.
func (s *Server) nipadDocument(ctx context.Context, path string) ([]byte, error) {
	doc := map[string]any{}
	if s.opts.PubkeyHex != "" {
		doc["names"] = map[string]string{"_": s.opts.PubkeyHex}
	}
	if repo, ok := s.repoAt(ctx, path); ok {
		doc[path] = nipadEntry{
			Filter: nipadFilter{Kinds: []int{nip34.KindAnnouncement}, Authors: []string{repo.Pubkey}, D: []string{repo.Identifier}, Limit: 1},
			Relays: s.svc.RelayURLs(),
		}
	}
	return json.Marshal(doc)
}

// repoAt is the repository a NIP-AD path names, if the pages show it.
func (s *Server) repoAt(ctx context.Context, path string) (nip34.RepoRef, bool) {
	if len(path) > maxNIPADPath || len(path) == 0 || path[0] != '/' {
		return nip34.RepoRef{}, false
	}
	// A browser's pathname is percent-encoded; a decoded one (a space
	// where %20 was) reads the same, since the identifier is unescaped
	// once (git.ParseRepoPath).
	rest, ok := s.svc.Within(path)
	if !ok {
		return nip34.RepoRef{}, false
	}
	repo, _, err := git.ParseRepoPath(rest)
	if err != nil || repo.PRs {
		return nip34.RepoRef{}, false
	}
	s.gitMu.RLock()
	shown := s.shown
	s.gitMu.RUnlock()
	if shown == nil || !shown(ctx, repo) {
		return nip34.RepoRef{}, false
	}
	return repo, true
}

// serveNIPAD answers a GET of the well-known path with ?path=.
func (s *Server) serveNIPAD(w http.ResponseWriter, r *http.Request, path string) {
	body, err := s.nipadDocument(r.Context(), path)
	if err != nil {
		http.Error(w, "error: could not build the document", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}
