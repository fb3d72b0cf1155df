package pages

import (
	"net/http"

	"github.com/grasp-dev/grasp/core/nip34"
)

var issueTmpl = discussionTemplate("issue", `{{template "head" .}}{{template "top" .}}
<div class="post body">{{if .T.Body}}{{.T.Body}}{{else}}<p class="muted">No description.</p>{{end}}</div>
{{template "bottom" .}}`)

// issuePage serves /<repo>/issues/<event id>: the issue (kind 1621) with
// its body, status history, labels, cover note and threaded comments.
func (p *Pages) issuePage(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, id string) {
	ctx := r.Context()
	rv := p.repoView(ctx, repo, "issues")
	root, ok, err := p.loadRoot(ctx, rv.Meta, id, nip34.KindIssue)
	if err != nil {
		p.eventsError(w, r, err)
		return
	}
	if !ok {
		p.errorPage(w, r, http.StatusNotFound, "This repository has no such issue on this relay.")
		return
	}
	t, err := p.loadThread(ctx, rv.Meta, root)
	if err != nil {
		p.eventsError(w, r, err)
		return
	}
	d := struct {
		R repoView
		T threadView
	}{R: rv, T: p.view(r, rv.Meta, t, "issues", threadPageOf(r))}
	p.render(w, r, http.StatusOK, d.T.Subject, p.crumbs(rv, link{Text: "issues", Href: rv.Base + "/issues"}, link{Text: d.T.Subject}), issueTmpl, d)
}

func (p *Pages) eventsError(w http.ResponseWriter, r *http.Request, err error) {
	p.log.Warn("reading events for a page failed", "path", r.URL.Path, "error", err)
	p.errorPage(w, r, http.StatusInternalServerError, "The relay's events could not be read.")
}
