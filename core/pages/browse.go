package pages

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/grasp-dev/grasp/core/nip34"
)

var treeTmpl = pageTemplate("tree", whereTmpl+`{{template "head" .}}
{{template "where" .}}
{{if .Entries}}<table><tr><th>Name</th><th>Size</th></tr>
{{range .Entries}}<tr><td>{{if eq .Type "tree"}}📁 <a href="{{$.R.Base}}/tree/{{path $.Rev}}/{{path .Path}}">{{.Name}}/</a>{{else if eq .Type "blob"}}<a href="{{$.R.Base}}/blob/{{path $.Rev}}/{{path .Path}}">{{.Name}}</a>{{else}}{{.Name}} <span class="muted">(submodule {{.OID}})</span>{{end}}</td><td class="muted">{{size .Size}}</td></tr>
{{end}}</table>{{else}}<p class="muted">This directory is empty.</p>{{end}}
{{if .Pager.Pages}}<p class="pager">Entries {{.Pager.First}}–{{.Pager.Last}} of {{.Pager.Total}} · page {{.Pager.Page}} of {{.Pager.Pages}}{{if .Pager.Prev}} · <a href="?page={{.Pager.Prev}}">previous</a>{{end}}{{if .Pager.Next}} · <a href="?page={{.Pager.Next}}">next</a>{{end}}</p>{{end}}`)

var blobTmpl = pageTemplate("blob", whereTmpl+`{{template "head" .}}
{{template "where" .}}
{{if .Binary}}<p class="muted">Binary file, not shown. <a href="{{.Raw}}?download">Download it</a>.</p>
{{else if .TooLarge}}<p class="muted">This file is {{size .Size}}; files over {{size .Max}} are not shown here. <a href="{{.Raw}}">Read it raw</a> or <a href="{{.Raw}}?download">download it</a>.</p>
{{else}}{{with .MD}}{{if .HTML}}<div class="readme">{{.HTML}}</div><h2>Source</h2>{{else}}<p class="muted">Shown as plain text: {{.Plain}}.</p>{{end}}{{end}}
{{with .Code}}{{if .CSS}}<style>{{.CSS}}</style>{{end}}{{if .Plain}}<p class="muted">Not coloured as {{.Lang}}: {{.Plain}}.</p>{{end}}
<pre class="code chroma">{{.Lines}}</pre>
{{if .Cut}}<p class="muted">Only the first {{.Cut}} lines are shown. <a href="{{$.Raw}}">Read it raw</a>.</p>{{end}}{{end}}{{end}}`)

// whereTmpl is the line above a tree or a file: the revision, the path with
// a link for each directory, and what else there is of it.
const whereTmpl = `{{define "where"}}<p class="where">{{.RevKind}} <code>{{.Rev}}</code> · <a href="{{.R.Base}}/tree/{{path .Rev}}">{{.R.Meta.Name}}</a>{{range .Up}} / <a href="{{$.R.Base}}/tree/{{path $.Rev}}/{{path .Href}}">{{.Text}}</a>{{end}}{{if .Name}}{{if .Raw}} / <strong>{{.Name}}</strong> <span class="muted">({{size .Size}})</span>{{end}}{{end}}</p>
<p class="actions">{{if .Raw}}{{if .Blaming}}<a href="{{.R.Base}}/blob/{{path .Rev}}/{{path .Path}}">Normal view</a>{{else}}<a href="{{.R.Base}}/blame/{{path .Rev}}/{{path .Path}}">Blame</a>{{end}} · <a href="{{.Raw}}">Raw</a> · <a href="{{.Raw}}?download">Download</a> · {{end}}<a href="{{.R.Base}}/commits/{{path .Rev}}{{if .Path}}/{{path .Path}}{{end}}">History</a>{{if not .Raw}} · Snapshot of {{.Rev}}: <a href="{{.R.Base}}/archive/{{path .Rev}}.tar.gz">tar.gz</a> <a href="{{.R.Base}}/archive/{{path .Rev}}.zip">zip</a>{{end}}</p>{{end}}`

type browseData struct {
	R            repoView
	Rev, RevKind string
	Path, Name   string
	Up           []link
	Entries      []treeEntry
	Pager        pager
	Size, Max    int64
	Binary       bool
	TooLarge     bool
	MD           *markdownView
	Code         *codeView
	Blame        *blameView // blame/: the file's lines with their commits
	Blaming      bool       // this is the blame of the file
	Raw          string     // the file's raw URL path; "" for a tree
}

// at reads the repository's state and resolves "<rev>/<path>" in it (""
// is HEAD's root), answering the request itself when it cannot.
func (p *Pages) at(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest string) (st repoState, rev, oid, path string, ok bool) {
	st, err := p.state(r.Context(), repo)
	if err != nil {
		p.gitError(w, r, err)
		return st, "", "", "", false
	}
	if rest == "" {
		if st.headOID == "" {
			p.errorPage(w, r, http.StatusNotFound, "Nothing has been pushed to this repository yet.")
			return st, "", "", "", false
		}
		rest = escapePath(strings.TrimPrefix(st.head, "refs/heads/"))
	}
	rev, oid, path, err = p.resolve(r.Context(), st, rest)
	if err != nil {
		p.errorPage(w, r, http.StatusNotFound, "This repository has no such branch, tag or commit.")
		return st, "", "", "", false
	}
	if !treePath(path) {
		// Audit F32: git refuses these, which was a 500 and a WARN per
		// request; no tree holds such a path, so it is not found.
		p.errorPage(w, r, http.StatusNotFound, "No tree holds such a path.")
		return st, "", "", "", false
	}
	return st, rev, oid, path, true
}

// treePath reports whether path can name an entry of a git tree: no "."
// or ".." segment and no NUL.
func treePath(path string) bool {
	if strings.ContainsRune(path, 0) {
		return false
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// browse serves tree/<rev>/<path> and blob/<rev>/<path>; a bare tree is
// HEAD's root.
func (p *Pages) browse(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, view, rest string) {
	ctx := r.Context()
	st, rev, oid, path, ok := p.at(w, r, repo, rest)
	if !ok {
		return
	}
	d := browseData{Rev: rev, RevKind: revKind(st, rev), Path: path, Max: int64(p.opts.MaxFileBytes)}
	if path != "" {
		segs := strings.Split(path, "/")
		for i := range segs[:len(segs)-1] {
			d.Up = append(d.Up, link{Text: segs[i], Href: strings.Join(segs[:i+1], "/")})
		}
		d.Name = segs[len(segs)-1]
		if view == "tree" {
			d.Up = append(d.Up, link{Text: d.Name, Href: path})
		}
	}
	var self treeEntry
	if path != "" {
		if self, ok = p.entry(w, r, repo, oid, rev, path); !ok {
			return
		}
	}
	d.R = p.repoView(ctx, repo, "tree")
	crumbs := p.crumbs(d.R, link{Text: rev})
	if view == "tree" {
		if path != "" && self.Type != "tree" {
			p.errorPage(w, r, http.StatusNotFound, path+" is not a directory.")
			return
		}
		all, err := p.cachedTree(ctx, repo, oid, path, false)
		if err != nil {
			p.gitError(w, r, err)
			return
		}
		// a page of the listing: what one view builds is bounded whatever
		// was pushed (audit 2026-11b, F29)
		d.Pager = paginate(r, len(all), p.opts.TreePage)
		d.Entries = all[d.Pager.lo:d.Pager.hi]
		p.render(w, r, http.StatusOK, d.R.Meta.Name+": "+path, crumbs, treeTmpl, d)
		return
	}
	if self.Type != "blob" {
		p.errorPage(w, r, http.StatusNotFound, path+" is not a file.")
		return
	}
	d.Size = self.Size
	d.Raw = d.R.Base + "/raw/" + escapePath(rev) + "/" + escapePath(path)
	if self.Size > int64(p.opts.MaxFileBytes) {
		d.TooLarge = true
	} else {
		data, err := p.cachedBlob(ctx, repo, self.OID)
		if err != nil {
			p.gitError(w, r, err)
			return
		}
		d.Binary = binary(data)
		if !d.Binary {
			if isMarkdown(self.Name) {
				v := p.markdown(r, self.OID, data, d.R.Base+"/blob/"+escapePath(rev), parentDir(self.Path))
				d.MD = &v
			}
			c := p.code(r, self.OID, self.Name, data)
			d.Code = &c
		}
	}
	p.render(w, r, http.StatusOK, d.R.Meta.Name+": "+path, crumbs, blobTmpl, d)
}

// fileAt resolves <rev>/<path> for the views of one file (raw, blame):
// it answers 404 itself, with noPath when the path is missing and "is not
// a file" when it names a directory, and reports ok false when it did.
func (p *Pages) fileAt(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest, noPath string) (st repoState, rev, oid, path string, self treeEntry, ok bool) {
	st, rev, oid, path, ok = p.at(w, r, repo, rest)
	if !ok {
		return
	}
	if path == "" {
		p.errorPage(w, r, http.StatusNotFound, noPath)
		return st, rev, oid, path, self, false
	}
	if self, ok = p.entry(w, r, repo, oid, rev, path); !ok {
		return
	}
	if self.Type != "blob" {
		p.errorPage(w, r, http.StatusNotFound, path+" is not a file.")
		return st, rev, oid, path, self, false
	}
	return st, rev, oid, path, self, true
}

// entry is the tree entry at path in the tree-ish oid (named rev), or a
// 404 answered.
func (p *Pages) entry(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, oid, rev, path string) (treeEntry, bool) {
	entries, err := p.cachedTree(r.Context(), repo, oid, path, true)
	if err != nil {
		p.gitError(w, r, err)
		return treeEntry{}, false
	}
	if len(entries) != 1 || entries[0].Path != path {
		p.errorPage(w, r, http.StatusNotFound, "There is no "+path+" in "+rev+".")
		return treeEntry{}, false
	}
	return entries[0], true
}

func revKind(st repoState, rev string) string {
	switch {
	case st.refs["refs/heads/"+rev] != "":
		return "Branch"
	case st.refs["refs/tags/"+rev] != "":
		return "Tag"
	}
	return "Commit"
}

// cachedTree is tree keyed by the object id, which never changes meaning;
// concurrent views of one tree share one read.
func (p *Pages) cachedTree(ctx context.Context, repo nip34.RepoRef, oid, path string, self bool) ([]treeEntry, error) {
	key := "tree|" + repo.String() + "|" + oid + "|" + strconv.FormatBool(self) + "|" + path
	v, err := p.cache.load(ctx, key, func(ctx context.Context) (any, int, error) {
		list, err := p.tree(ctx, repo, oid, path, self)
		size := 0
		for _, e := range list {
			size += len(e.Path) + len(e.Name) + 120
		}
		return list, size, err
	})
	if err != nil {
		return nil, err
	}
	return v.([]treeEntry), nil
}

var refsTmpl = pageTemplate("refs", `{{template "head" .}}
<h2>Branches</h2>
{{if .Branches}}<table>{{range .Branches}}<tr><td><a href="{{$.R.Base}}/tree/{{path .Name}}">{{.Name}}</a>{{if .Head}} <span class="badge head">HEAD</span>{{end}}</td><td><a href="{{$.R.Base}}/commit/{{.OID}}"><code>{{.OID}}</code></a></td><td><a href="{{$.R.Base}}/commits/{{path .Name}}">commits</a> · <a href="{{$.R.Base}}/archive/{{path .Name}}.tar.gz">tar.gz</a> <a href="{{$.R.Base}}/archive/{{path .Name}}.zip">zip</a></td></tr>{{end}}</table>{{else}}<p class="muted">No branches yet.</p>{{end}}
<h2>Tags</h2>
{{if .Tags}}<table>{{range .Tags}}<tr><td><a href="{{$.R.Base}}/tree/{{path .Name}}">{{.Name}}</a></td><td><code>{{.OID}}</code></td><td><a href="{{$.R.Base}}/archive/{{path .Name}}.tar.gz">tar.gz</a> <a href="{{$.R.Base}}/archive/{{path .Name}}.zip">zip</a></td></tr>{{end}}</table>{{else}}<p class="muted">No tags.</p>{{end}}`)

func (p *Pages) refsPage(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef) {
	ctx := r.Context()
	st, err := p.state(ctx, repo)
	if err != nil {
		p.gitError(w, r, err)
		return
	}
	rv := p.repoView(ctx, repo, "refs")
	d := struct {
		R              repoView
		Branches, Tags []refEntry
	}{R: rv, Branches: st.named("refs/heads/"), Tags: st.named("refs/tags/")}
	p.render(w, r, http.StatusOK, rv.Meta.Name+": branches and tags", p.crumbs(rv, link{Text: "branches and tags"}), refsTmpl, d)
}

// cachedBlob reads a file no larger than MaxFileBytes, keyed by its object
// id.
func (p *Pages) cachedBlob(ctx context.Context, repo nip34.RepoRef, oid string) ([]byte, error) {
	key := "blob|" + repo.String() + "|" + oid
	v, err := p.cache.load(ctx, key, func(ctx context.Context) (any, int, error) {
		data, _, err := p.blob(ctx, repo, oid, p.opts.MaxFileBytes)
		return data, len(data), err
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// parentDir is the directory of a repository path ("" at the root).
func parentDir(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return ""
}

// pager is one page of a long listing.
type pager struct {
	Page, Pages, Prev, Next int // Pages is 0 when everything fits on one page
	First, Last, Total      int // 1-based positions shown
	lo, hi                  int // the slice shown
}

// paginate picks the page of ?page=N (1-based, clamped) of total items, per
// to a page.
func paginate(r *http.Request, total, per int) pager {
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pages := max((total+per-1)/per, 1)
	page = min(max(page, 1), pages)
	pg := pager{Page: page, Total: total, lo: min((page-1)*per, total), hi: min(page*per, total)}
	pg.First, pg.Last = pg.lo+1, pg.hi
	if pages > 1 {
		pg.Pages = pages
		if page > 1 {
			pg.Prev = page - 1
		}
		if page < pages {
			pg.Next = page + 1
		}
	}
	return pg
}
