package git

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
{{if .Found}}<h1>{{.ID}}</h1>
<p>A git repository hosted on this GRASP server, owned by <code>{{.Owner}}</code>.</p>
<p><a href="{{.Browse}}">Browse it on a git-nostr client</a></p>
<p>Clone: <code>git clone {{.Clone}}</code></p>
{{else}}<h1>Repository not found</h1>
<p>This server does not host <code>{{.Owner}}/{{.ID}}</code>.</p>
{{end}}</body></html>
`))

type pageData struct {
	Found                   bool
	Title, Owner, ID, Clone string
	Browse                  template.URL
}

// servePage answers GET /<npub>/<id>.git with a page linking to a web
// client when the bare repository exists, and an HTML 404 otherwise (G01-G7).
func (h *handler) servePage(w http.ResponseWriter, r *http.Request, owner, id string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	d := pageData{Owner: owner, ID: id, Title: "Repository not found"}
	// A private repository's page is the page of one that does not exist,
	// unless the request carries a reader's NIP-98 token (GRASP-08).
	if repo, err := refOf(owner, id); err == nil && h.repos.Exists(repo) && h.pageReadable(r, repo, owner, id) {
		d.Found = true
		d.Title = id
		d.Clone = h.repoRootURL(r, owner, id)
		browse := strings.NewReplacer("{npub}", owner, "{id}", url.PathEscape(id)).Replace(h.opts.BrowseURL)
		d.Browse = template.URL(browse)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if d.Found {
		w.WriteHeader(http.StatusOK)
	} else {
		w.WriteHeader(http.StatusNotFound)
	}
	if r.Method == http.MethodHead {
		return
	}
	_ = pageTmpl.Execute(w, d)
}
