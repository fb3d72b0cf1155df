package pages

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// repoRoute dispatches /<npub>/<d>.git/<sub>.
func (p *Pages) repoRoute(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, sub string) {
	view, rest, _ := strings.Cut(strings.TrimSuffix(sub, "/"), "/")
	switch view {
	case "":
		p.summary(w, r, repo)
	case "tree", "blob":
		p.browse(w, r, repo, view, rest)
	case "commit":
		p.commitPage(w, r, repo, rest)
	case "commits":
		p.history(w, r, repo, rest)
	case "blame":
		p.blame(w, r, repo, rest)
	case "raw":
		p.raw(w, r, repo, rest)
	case "archive":
		p.archive(w, r, repo, rest)
	case "feed":
		p.feed(w, r, repo, rest)
	case "refs":
		p.refsPage(w, r, repo)
	case "status":
		p.statusPage(w, r, repo)
	case "issues":
		if rest != "" {
			p.issuePage(w, r, repo, rest)
			return
		}
		p.discussions(w, r, repo, "issues")
	case "prs":
		if rest != "" {
			p.prPage(w, r, repo, rest)
			return
		}
		p.discussions(w, r, repo, "prs")
	default:
		p.notFound(w, r)
	}
}

// repoView is what every repository page shows above its own content.
type repoView struct {
	Base     string // the repository's URL path, base path included
	Tab      string
	Meta     repoMeta
	CloneURL string
	// OtherCloneURLs are the clone URLs under the service's other public
	// URLs (a .onion, a second name; issue 25 part 5).
	OtherCloneURLs []string
	Issues         string // links to the web client
	Counts         tabCounts
}

func (p *Pages) repoView(ctx context.Context, repo nip34.RepoRef, tab string) repoView {
	return p.repoViewOf(ctx, repo, tab, p.meta(ctx, repo))
}

// repoViewOf is repoView with the announcements already read.
func (p *Pages) repoViewOf(ctx context.Context, repo nip34.RepoRef, tab string, m repoMeta) repoView {
	return repoView{
		Base:     p.repoPath(repo),
		Tab:      tab,
		Meta:     m,
		CloneURL: p.opts.Service.CloneURL(repo.Pubkey, repo.Identifier),
		// the primary's is CloneURL
		OtherCloneURLs: p.opts.Service.CloneURLs(repo.Pubkey, repo.Identifier)[1:],
		Counts:         p.counts(ctx, repo, m),
	}
}

func (p *Pages) repoPath(repo nip34.RepoRef) string {
	return p.opts.Service.Path + git.RepoURLPath(repo.Npub(), repo.Identifier)
}

func (p *Pages) crumbs(v repoView, more ...link) []link {
	// the owner leads to their repositories on the landing page
	owner := p.opts.Service.Path + "/?q=" + v.Meta.Owner.Npub + "#repositories"
	return append([]link{{Text: v.Meta.Owner.Short, Href: owner}, {Text: v.Meta.Name, Href: v.Base}}, more...)
}

// repoHeader is the head of every repository page: name, description,
// tabs. It is defined once and included by each page's template.
const repoHeader = `{{define "head"}}<h1>{{.R.Meta.Name}}</h1>
{{if .R.Meta.Description}}<p>{{.R.Meta.Description}}</p>{{end}}
<nav class="tabs">
<a href="{{.R.Base}}"{{if eq .R.Tab "summary"}} class="on"{{end}}>Summary</a>
<a href="{{.R.Base}}/tree"{{if eq .R.Tab "tree"}} class="on"{{end}}>Files</a>
<a href="{{.R.Base}}/commits"{{if eq .R.Tab "commits"}} class="on"{{end}}>Commits</a>
<a href="{{.R.Base}}/refs"{{if eq .R.Tab "refs"}} class="on"{{end}}>Branches and tags</a>
<a href="{{.R.Base}}/issues"{{if eq .R.Tab "issues"}} class="on"{{end}}>Issues{{with .R.Counts.Issues}} <span class="count">{{.}}</span>{{end}}</a>
<a href="{{.R.Base}}/prs"{{if eq .R.Tab "prs"}} class="on"{{end}}>Pull requests and patches{{with .R.Counts.PRs}} <span class="count">{{.}}</span>{{end}}</a>
<a href="{{.R.Base}}/status"{{if eq .R.Tab "status"}} class="on"{{end}}>On this server</a>
<a href="{{.R.Meta.WebClientURL}}" rel="nofollow">Open in a git-nostr client</a>
</nav>{{end}}`

func pageTemplate(name, body string) *template.Template {
	return template.Must(template.New(name).Funcs(funcs).Parse(repoHeader + body))
}

var funcs = template.FuncMap{
	"path": escapePath,
	"seg":  escapeSegment,
	"date": func(t interface{ Format(string) string }) string { return t.Format("2006-01-02 15:04") },
	"size": humanSize,
	"inc":  func(n int) int { return n + 1 },
	"dec":  func(n int) int { return n - 1 },
	// short is an event or object id cut for reading
	"short":     func(s string) string { return s[:min(len(s), 12)] },
	"npub":      nip34.Npub,
	"shortnpub": func(pk string) string { return personOf(pk).Short },
}

func escapeSegment(s string) string { return url.PathEscape(s) }

// escapePath escapes each segment of a slash-separated path.
func escapePath(s string) string {
	segs := strings.Split(s, "/")
	for i := range segs {
		segs[i] = url.PathEscape(segs[i])
	}
	return strings.Join(segs, "/")
}

func humanSize(n int64) string {
	switch {
	case n < 0:
		return ""
	case n < 1024:
		return itoa(n) + " B"
	case n < 1<<20:
		return itoa(n>>10) + " KiB"
	default:
		return itoa(n>>20) + " MiB"
	}
}
