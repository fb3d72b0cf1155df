package pages

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

var commitTmpl = pageTemplate("commit", diffParts+`{{template "head" .}}
{{with .C}}<h2>{{.Subject}}</h2>
{{if .Body}}<pre>{{.Body}}</pre>{{end}}
<table>
<tr><th>Commit</th><td><code>{{.OID}}</code> · <a href="{{$.R.Base}}/tree/{{.OID}}">browse files</a> · snapshot <a href="{{$.R.Base}}/archive/{{.OID}}.tar.gz">tar.gz</a> <a href="{{$.R.Base}}/archive/{{.OID}}.zip">zip</a></td></tr>
<tr><th>Author</th><td>{{.Author}} &lt;{{.Email}}&gt;, {{date .When}}</td></tr>
{{range .Parents}}<tr><th>Parent</th><td><a href="{{$.R.Base}}/commit/{{.}}"><code>{{.}}</code></a></td></tr>{{end}}
</table>{{end}}
<h2 id="files">Files changed</h2>
{{if .Merge}}<p class="muted">A merge commit: shown against its first parent.</p>{{end}}
{{template "files" .Diff}}{{template "diff" .Diff}}`)

// emptyTree is git's (SHA-1) empty tree: a root commit is compared with it.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

type commitGit struct {
	C    commitInfo
	Diff diffView
}

func (g commitGit) size() int {
	return g.Diff.size() + len(g.C.Subject) + len(g.C.Body) + len(g.C.Author) + len(g.C.Email) + 200
}

// commitPage serves commit/<oid>: the commit, the files it changed with
// their diffstat, and its diff (against the first parent), as cgit shows
// one.
func (p *Pages) commitPage(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, oid string) {
	ctx := r.Context()
	if !nip34.IsObjectID(oid) {
		p.errorPage(w, r, http.StatusNotFound, "A commit is named by its full object id.")
		return
	}
	g, err := p.commitGit(ctx, repo, oid)
	if errors.Is(err, errNoCommit) {
		p.errorPage(w, r, http.StatusNotFound, "This repository has no commit "+oid+".")
		return
	}
	if err != nil {
		p.gitError(w, r, err)
		return
	}
	rv := p.repoView(ctx, repo, "commits")
	d := struct {
		R repoView
		commitGit
		Merge bool
	}{R: rv, commitGit: g, Merge: len(g.C.Parents) > 1}
	p.render(w, r, http.StatusOK, g.C.Subject, p.crumbs(rv, link{Text: g.C.Short}), commitTmpl, d)
}

var errNoCommit = errors.New("no such commit")

// commitGit reads a commit and its diff, once: a commit never changes.
func (p *Pages) commitGit(ctx context.Context, repo nip34.RepoRef, oid string) (commitGit, error) {
	v, err := p.cache.load(ctx, "commit|"+repo.String()+"|"+oid, func(ctx context.Context) (any, int, error) {
		t, err := p.read(ctx, repo, 64, "cat-file", "-t", oid)
		if err != nil || strings.TrimSpace(string(t)) != "commit" {
			return nil, 0, errNoCommit
		}
		list, err := p.commits(ctx, repo, oid, "", 1, 0)
		if err != nil || len(list) == 0 {
			return nil, 0, errNoCommit
		}
		g := commitGit{C: list[0]}
		from := emptyTree
		if len(g.C.Parents) > 0 {
			from = g.C.Parents[0]
		}
		if g.Diff, err = p.diffBetween(ctx, repo, from, oid); err != nil {
			return nil, 0, err
		}
		return g, g.size(), nil
	})
	if err != nil {
		return commitGit{}, err
	}
	return v.(commitGit), nil
}

func diffClass(l string) string {
	switch {
	case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "index "),
		strings.HasPrefix(l, "new file"), strings.HasPrefix(l, "deleted file"), strings.HasPrefix(l, "rename "), strings.HasPrefix(l, "similarity "):
		return "meta"
	case strings.HasPrefix(l, "@@"):
		return "hunk"
	case strings.HasPrefix(l, "+"):
		return "add"
	case strings.HasPrefix(l, "-"):
		return "del"
	}
	return ""
}
