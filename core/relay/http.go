package relay

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
)

// CORS for every response (GRASP-01 C1-C3). Browser git clients send
// Git-Protocol and friends, so the allow list is wider than the spec minimum.
// The gate serves the websocket and NIP-11 is served here, so khatru's own
// ServeHTTP (with its CORS middleware) is never called.
const (
	corsMethods = "GET, POST, OPTIONS"
	corsHeaders = "Content-Type, Git-Protocol, Authorization, Accept, Content-Encoding, X-Requested-With"
)

// route is the HTTP contract of grasp.md §2: OPTIONS, websocket, git paths,
// NIP-11, landing page, 404.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)

	switch {
	case r.Method == http.MethodOptions:
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
	case isWebsocket(r):
		s.gate.ServeHTTP(w, r)
	case git.Routed(r.URL.EscapedPath()):
		s.gitMu.RLock()
		git := s.git
		s.gitMu.RUnlock()
		if git == nil {
			s.notFound(w, r)
			return
		}
		git.ServeHTTP(w, r)
	case acceptsNostrJSON(r):
		s.serveNIP11(w, r)
	case r.URL.Path == "/":
		s.landing(w, r)
	case r.URL.Path == "/icon.png" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.serveIcon(w, r)
	default:
		s.notFound(w, r)
	}
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

type pageData struct {
	Name, Description string
	RelayURL, BaseURL string
	Status            int
	Path              string
}

func (s *Server) pageData(r *http.Request) pageData {
	d := pageData{Name: s.opts.Name, Description: s.opts.Description, RelayURL: s.wsURL,
		BaseURL: strings.TrimSuffix(s.opts.PublicURL, "/")}
	if d.Name == "" {
		d.Name = "grasp"
	}
	if d.BaseURL == "" {
		scheme, ws := "http", "ws"
		if r.TLS != nil {
			scheme, ws = "https", "wss"
		}
		d.BaseURL = scheme + "://" + r.Host
		d.RelayURL = ws + "://" + r.Host
	}
	return d
}

func (s *Server) landing(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD, OPTIONS")
		s.page(w, r, http.StatusMethodNotAllowed)
		return
	}
	s.page(w, r, http.StatusOK)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.page(w, r, http.StatusNotFound)
}

func (s *Server) page(w http.ResponseWriter, r *http.Request, status int) {
	d := s.pageData(r)
	d.Status = status
	d.Path = r.URL.Path
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if err := pageTemplate.Execute(w, d); err != nil {
		s.log.Debug("writing page failed", "path", r.URL.Path, "error", err)
	}
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{if eq .Status 200}}{{.Name}}{{else}}{{.Status}} – {{.Name}}{{end}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;line-height:1.5}code{background:#f2f2f2;padding:0 .2em}</style>
</head><body>
{{if eq .Status 200}}
<h1>{{.Name}}</h1>
{{if .Description}}<p>{{.Description}}</p>{{end}}
<p>This is a <a href="https://ngit.dev/grasp">GRASP</a> server: a Nostr relay for
NIP-34 git collaboration events and a git smart-HTTP host whose pushes are authorised
by signed Nostr repository-state events.</p>
<ul>
<li>Nostr relay: <code>{{.RelayURL}}</code></li>
<li>Repositories: <code>{{.BaseURL}}/&lt;npub&gt;/&lt;identifier&gt;.git</code></li>
</ul>
<h2>Use it</h2>
<p>Install <a href="https://ngit.dev">ngit</a>, run <code>ngit init</code> in your repository and
choose this server ({{.RelayURL}}) as one of its GRASP servers. ngit publishes the repository
announcement here, and <code>git push</code> then sends your commits to this server once the
signed state event is accepted.</p>
<p>Browse repositories, issues and pull requests with a git-over-nostr client such as
<a href="https://gitworkshop.dev">gitworkshop.dev</a>.</p>
{{else if eq .Status 404}}
<h1>Not found</h1>
<p>Nothing is served at <code>{{.Path}}</code>. Repositories hosted here live at
<code>{{.BaseURL}}/&lt;npub&gt;/&lt;identifier&gt;.git</code>; browse them with
<a href="https://gitworkshop.dev">gitworkshop.dev</a>.</p>
<p><a href="/">{{.Name}}</a></p>
{{else}}
<h1>{{.Status}}</h1>
<p><a href="/">{{.Name}}</a></p>
{{end}}
</body></html>
`))
