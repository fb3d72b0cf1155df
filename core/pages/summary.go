package pages

import (
	"context"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

var summaryTmpl = pageTemplate("summary", stateTmpl+`{{template "head" .}}
{{with .R.Meta}}{{if .Held}}<p class="muted">The announcement of this repository waits for its git data.</p>{{end}}{{end}}
<h2>Clone</h2>
<pre>git clone {{.R.CloneURL}}</pre>
<h2>On this server</h2>
{{template "stateline" .Server}}{{with .Server}}{{if .WaitingTotal}}<p>{{.WaitingTotal}} event{{if ne .WaitingTotal 1}}s wait{{else}} waits{{end}} in purgatory for this repository's git data.</p>{{end}}
{{with .LatestRefusal}}<p>Last refused push: {{date .At}}, {{.Why}}.</p>{{end}}{{end}}
<p><a href="{{.R.Base}}/status">The signed state, purgatory, the hunter, the other servers and the maintainers in detail</a></p>
{{with .R.Meta}}{{if .Clone}}<p>Clone URLs announced: {{range $i, $c := .Clone}}{{if $i}}, {{end}}<code>{{$c}}</code>{{end}}</p>{{end}}
{{if .Relays}}<p>Relays: {{range $i, $c := .Relays}}{{if $i}}, {{end}}<code>{{$c}}</code>{{end}}</p>{{end}}
{{if .Web}}<p>Web: {{range $i, $c := .Web}}{{if $i}}, {{end}}<a href="{{$c}}" rel="nofollow">{{$c}}</a>{{end}}</p>{{end}}
<h2>People</h2>
<ul class="plain">
<li>Owner: <code title="{{.Owner.Npub}}">{{.Owner.Npub}}</code></li>
{{range .Maintainers}}<li>Maintainer: <code>{{.Npub}}</code></li>{{end}}
{{range .Invited}}<li>Invited maintainer (has not listed back yet): <code>{{.Npub}}</code></li>{{end}}
{{range .Moderators}}<li>Moderator: <code>{{.Npub}}</code></li>{{end}}
</ul>{{end}}
{{if .Empty}}<h2>Branches</h2><p class="muted">Nothing has been pushed yet.</p>{{else}}
<h2>Branches and tags</h2>
<p>{{range .Branches}}<a href="{{$.R.Base}}/tree/{{path .Name}}">{{.Name}}</a>{{if .Head}} <span class="badge head">HEAD</span>{{end}} &nbsp; {{end}}</p>
{{if .Tags}}<p>Tags: {{range .Tags}}<a href="{{$.R.Base}}/tree/{{path .Name}}">{{.Name}}</a> &nbsp; {{end}}</p>{{end}}
<h2>Recent commits</h2>
<table>{{range .Git.Commits}}<tr><td><a href="{{$.R.Base}}/commit/{{.OID}}"><code>{{.Short}}</code></a></td><td>{{.Subject}}</td><td class="muted">{{.Author}}</td><td class="muted">{{date .When}}</td></tr>{{end}}</table>
<p><a href="{{.R.Base}}/commits/{{path .Head}}">All commits</a></p>
{{if .Git.ReadmeName}}<h2 id="readme">{{.Git.ReadmeName}}</h2>
<div class="readme">{{if .Git.ReadmeHTML}}{{.Git.ReadmeHTML}}{{else}}<pre>{{.Git.ReadmeText}}</pre>{{end}}</div>{{end}}
{{end}}`)

type summaryGit struct {
	Commits    []commitInfo
	ReadmeName string
	ReadmeHTML template.HTML
	ReadmeText string
}

func (g summaryGit) size() int {
	n := len(g.ReadmeHTML) + len(g.ReadmeText)
	for _, c := range g.Commits {
		n += len(c.Subject) + len(c.Author) + len(c.Email) + len(c.Body) + 200
	}
	return n
}

func (p *Pages) summary(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef) {
	ctx := r.Context()
	st, err := p.state(ctx, repo)
	if err != nil {
		p.gitError(w, r, err)
		return
	}
	rv := p.repoView(ctx, repo, "summary")
	d := struct {
		R              repoView
		Empty          bool
		Head           string
		Branches, Tags []refEntry
		Git            summaryGit
		Server         statusView
	}{R: rv, Empty: st.headOID == "", Branches: st.named("refs/heads/"), Tags: st.named("refs/tags/"),
		Server: p.statusOf(ctx, repo, rv.Meta, st, false)}
	d.Head = strings.TrimPrefix(st.head, "refs/heads/")
	if !d.Empty {
		d.Git, err = p.summaryGit(ctx, st)
		if err != nil {
			p.gitError(w, r, err)
			return
		}
	}
	p.render(w, r, http.StatusOK, rv.Meta.Name, p.crumbs(rv), summaryTmpl, d)
}

// summaryGit reads the recent commits and the README of HEAD, once per
// state of the repository.
func (p *Pages) summaryGit(ctx context.Context, st repoState) (summaryGit, error) {
	key := "summary|" + st.repo.String() + "|" + st.key
	if v, ok := p.cache.get(key); ok {
		return v.(summaryGit), nil
	}
	var g summaryGit
	var err error
	if g.Commits, err = p.commits(ctx, st.repo, st.headOID, 10, 0); err != nil {
		return g, err
	}
	root, err := p.tree(ctx, st.repo, st.headOID, "", false)
	if err != nil {
		return g, err
	}
	if e, ok := pickReadme(root); ok {
		data, truncated, err := p.blob(ctx, st.repo, e.OID, p.opts.MaxFileBytes)
		if err != nil {
			return g, err
		}
		g.ReadmeName = e.Name
		switch {
		case binary(data):
			g.ReadmeText = "(binary file)"
		case isMarkdown(e.Name):
			g.ReadmeHTML = renderMarkdown(data, p.repoPath(st.repo)+"/blob/"+escapePath(strings.TrimPrefix(st.head, "refs/heads/")), "")
		default:
			g.ReadmeText = string(data)
		}
		if truncated {
			g.ReadmeText += "\n… (cut at " + strconv.Itoa(p.opts.MaxFileBytes) + " bytes)"
		}
	}
	p.cache.put(key, g, g.size())
	return g, nil
}

func (p *Pages) gitError(w http.ResponseWriter, r *http.Request, err error) {
	p.log.Warn("reading a repository for its page failed", "path", r.URL.Path, "error", err)
	p.errorPage(w, r, http.StatusInternalServerError, "The repository could not be read.")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
