package pages

import (
	"html/template"
	"net/http"

	"github.com/grasp-dev/grasp/docs"
)

// The publishing guide (docs/publishing.md, issue 26 part 7), served from
// the binary so it is the guide of the running version, with this
// server's own URLs next to the guide's example host.
var guideTmpl = pageTemplate("guide", `<p class="muted">This server is <code>{{.BaseURL}}</code>, its relay <code>{{.RelayURL}}</code>: where the guide writes <code>https://git.example.org</code>, use <code>{{.BaseURL}}</code>.</p>
<div class="readme">{{.HTML}}</div>`)

func (p *Pages) guide(w http.ResponseWriter, r *http.Request) {
	svc := p.opts.Service
	d := struct {
		BaseURL, RelayURL string
		HTML              template.HTML
	}{BaseURL: svc.BaseURL(), RelayURL: svc.RelayURL(), HTML: p.markdownOrText(r, "guide:publishing", docs.Publishing)}
	p.render(w, r, http.StatusOK, "Publishing a repository here", []link{{Text: "publishing"}}, guideTmpl, d)
}
