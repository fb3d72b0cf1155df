package pages

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

var summaryTmpl = pageTemplate("summary", stateTmpl+`{{template "head" .}}
{{with .R.Meta}}{{if .Held}}<p class="muted">The announcement of this repository waits for its git data.</p>{{end}}{{end}}
<h2 id="clone">Clone</h2>
{{with .Clone}}<dl class="clone">
<dt>HTTPS</dt><dd><code class="copy">{{.HTTPS}}</code></dd>
<dt>Nostr</dt><dd><code class="copy">{{.Nostr}}</code> <span class="muted">with <a href="https://ngit.dev">ngit</a>'s git-remote-nostr</span></dd>
{{if .Naddr}}<dt>naddr</dt><dd><code class="copy">{{.Naddr}}</code></dd>{{end}}
</dl>
<pre>git clone {{.HTTPS}}</pre>{{end}}
{{if .R.OtherCloneURLs}}<p>Also served at: {{range $i, $c := .R.OtherCloneURLs}}{{if $i}}, {{end}}<code>{{$c}}</code>{{end}}</p>{{end}}
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
<p><a href="{{.R.Base}}/commits/{{path .Head}}">All commits</a> · snapshot of {{.Head}}: <a href="{{.R.Base}}/archive/{{path .Head}}.tar.gz">tar.gz</a> <a href="{{.R.Base}}/archive/{{path .Head}}.zip">zip</a></p>
<p class="muted">Atom feeds: <a href="{{.R.Base}}/feed/commits">commits</a> · <a href="{{.R.Base}}/feed/issues">issues</a> · <a href="{{.R.Base}}/feed/prs">pull requests and patches</a></p>
{{if .Git.ReadmeName}}<h2 id="readme">{{.Git.ReadmeName}}</h2>
{{with .Readme}}{{if .Plain}}<p class="muted">Shown as plain text: {{.Plain}}.</p>{{end}}{{end}}
<div class="readme">{{if .Readme.HTML}}{{.Readme.HTML}}{{else}}<pre>{{.Git.ReadmeText}}</pre>{{end}}</div>{{end}}
{{end}}`)

// summaryGit is what the summary reads from git, cached by the
// repository's state; the README's HTML is not part of it (it is rendered
// and cached on its own, bounds.go).
type summaryGit struct {
	Commits    []commitInfo
	ReadmeName string
	ReadmeOID  string
	ReadmeText string
	readmeMD   bool   // render ReadmeText as Markdown
	readmeRev  string // the branch its relative links point into
}

func (g summaryGit) size() int {
	n := len(g.ReadmeText)
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
		Readme         markdownView
		Clone          cloneBox
		Server         statusView
	}{R: rv, Empty: st.headOID == "", Branches: st.named("refs/heads/"), Tags: st.named("refs/tags/"), Clone: p.cloneBoxOf(repo, rv.Meta),
		Server: p.statusOf(ctx, repo, rv.Meta, st, false)}
	d.Head = strings.TrimPrefix(st.head, "refs/heads/")
	if !d.Empty {
		d.Git, err = p.summaryGit(ctx, st)
		if err != nil {
			p.gitError(w, r, err)
			return
		}
		if d.Git.readmeMD {
			d.Readme = p.markdown(r, d.Git.ReadmeOID, []byte(d.Git.ReadmeText), p.repoPath(repo)+"/blob/"+escapePath(d.Git.readmeRev), "")
		}
	}
	p.render(w, r, http.StatusOK, rv.Meta.Name, p.crumbs(rv), summaryTmpl, d)
}

// summaryGit reads the recent commits and the README of HEAD, once per
// state of the repository.
func (p *Pages) summaryGit(ctx context.Context, st repoState) (summaryGit, error) {
	key := "summary|" + st.repo.String() + "|" + st.key
	v, err := p.cache.load(ctx, key, func(ctx context.Context) (any, int, error) {
		g, err := p.readSummaryGit(ctx, st)
		return g, g.size(), err
	})
	if err != nil {
		return summaryGit{}, err
	}
	return v.(summaryGit), nil
}

func (p *Pages) readSummaryGit(ctx context.Context, st repoState) (summaryGit, error) {
	var g summaryGit
	var err error
	if g.Commits, err = p.commits(ctx, st.repo, st.headOID, "", 10, 0); err != nil {
		return g, err
	}
	root, err := p.cachedTree(ctx, st.repo, st.headOID, "", false)
	if err != nil {
		return g, err
	}
	if e, ok := pickReadme(root); ok {
		data, truncated, err := p.blob(ctx, st.repo, e.OID, p.opts.MaxFileBytes)
		if err != nil {
			return g, err
		}
		g.ReadmeName, g.ReadmeOID = e.Name, e.OID
		switch {
		case binary(data):
			g.ReadmeText = "(binary file)"
		default:
			g.ReadmeText = string(data)
			g.readmeMD = isMarkdown(e.Name)
			g.readmeRev = strings.TrimPrefix(st.head, "refs/heads/")
		}
		if truncated {
			g.ReadmeText += "\n… (cut at " + strconv.Itoa(p.opts.MaxFileBytes) + " bytes)"
		}
	}
	return g, nil
}

func (p *Pages) gitError(w http.ResponseWriter, r *http.Request, err error) {
	p.log.Warn("reading a repository for its page failed", "path", r.URL.Path, "error", err)
	p.errorPage(w, r, http.StatusInternalServerError, "The repository could not be read.")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
