package pages

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

var historyTmpl = pageTemplate("history", `{{template "head" .}}
<p>Commits on {{.RevKind}} <code>{{.Rev}}</code>{{if .Path}} that change <a href="{{.R.Base}}/{{if .IsDir}}tree{{else}}blob{{end}}/{{path .Rev}}/{{path .Path}}">{{.Path}}</a>{{end}} · <a href="{{.Feed}}">Atom feed</a></p>
{{if .Commits}}<table>{{range .Commits}}<tr><td><a href="{{$.R.Base}}/commit/{{.OID}}"><code>{{.Short}}</code></a></td><td>{{.Subject}}</td><td class="muted">{{.Author}}</td><td class="muted">{{date .When}}</td></tr>{{end}}</table>
{{else}}<p class="muted">No commits{{if .Path}} change {{.Path}}{{end}}.</p>{{end}}
<p>{{if .Prev}}<a href="?page={{.Prev}}">Newer</a>{{end}} {{if .Next}}<a href="?page={{.Next}}">Older</a>{{end}}</p>`)

const historyPage = 50

// history serves commits/<rev>[/<path>]: the commits of a branch, tag or
// commit, or those of them that change one file or directory, 50 a page.
func (p *Pages) history(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest string) {
	ctx := r.Context()
	st, rev, oid, path, ok := p.at(w, r, repo, rest)
	if !ok {
		return
	}
	isDir := path == ""
	if path != "" {
		self, ok := p.entry(w, r, repo, oid, rev, path)
		if !ok {
			return
		}
		isDir = self.Type == "tree"
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	// one more than shown: is there an older page?
	list, err := p.cachedLog(ctx, repo, oid, path, historyPage+1, (page-1)*historyPage)
	if err != nil {
		p.gitError(w, r, err)
		return
	}
	rv := p.repoView(ctx, repo, "commits")
	d := struct {
		R                  repoView
		Rev, RevKind, Path string
		IsDir              bool
		Feed               string
		Commits            []commitInfo
		Prev, Next         int
	}{R: rv, Rev: rev, RevKind: strings.ToLower(revKind(st, rev)), Path: path, IsDir: isDir,
		Feed: rv.Base + "/feed/commits/" + escapePath(rev), Commits: list[:min(len(list), historyPage)]}
	if page > 1 {
		d.Prev = page - 1
	}
	if len(list) > historyPage {
		d.Next = page + 1
	}
	title := rv.Meta.Name + ": commits"
	if path != "" {
		title += " changing " + path
	}
	p.render(w, r, http.StatusOK, title, p.crumbs(rv, link{Text: "commits"}), historyTmpl, d)
}

// cachedLog is commits, cached by the commit it starts from (which never
// changes meaning), the path and the window.
func (p *Pages) cachedLog(ctx context.Context, repo nip34.RepoRef, oid, path string, n, skip int) ([]commitInfo, error) {
	key := "log|" + repo.String() + "|" + oid + "|" + strconv.Itoa(n) + "|" + strconv.Itoa(skip) + "|" + path
	v, err := p.cache.load(ctx, key, func(ctx context.Context) (any, int, error) {
		list, err := p.commits(ctx, repo, oid, path, n, skip)
		size := 0
		for _, c := range list {
			size += len(c.Subject) + len(c.Body) + len(c.Author) + len(c.Email) + 200
		}
		return list, size, err
	})
	if err != nil {
		return nil, err
	}
	return v.([]commitInfo), nil
}
