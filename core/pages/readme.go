package pages

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// A README is anyone's content: goldmark renders it (CommonMark and GFM
// tables, strikethrough, autolinks, task lists; raw HTML is escaped by
// goldmark's default), and bluemonday's UGC policy then removes whatever
// could run or restyle the page (scripts, event handlers, javascript: URLs,
// forms, iframes, styles). Links get rel="nofollow noopener".
var (
	markdown  = goldmark.New(goldmark.WithExtensions(extension.GFM))
	sanitiser = func() *bluemonday.Policy {
		p := bluemonday.UGCPolicy()
		p.RequireNoFollowOnLinks(true)
		p.AddTargetBlankToFullyQualifiedLinks(false)
		return p
	}()
)

// markdownView is what a view shows of a Markdown file: its HTML, or why it
// is shown as plain text.
type markdownView struct {
	HTML  template.HTML
	Plain string // "shown as plain text: <Plain>"; "" when HTML is set
}

func (v markdownView) size() int { return len(v.HTML) + len(v.Plain) }

// markdown renders the Markdown src, named by name (a blob's object id,
// "event:<id>"), for a view, within the bounds of bounds.go: shape-checked,
// on the render pool, within the budget, cached by name and the links'
// base.
func (p *Pages) markdown(r *http.Request, name string, src []byte, blobBase, dir string) markdownView {
	const kind = "markdown"
	key := "md|" + name + "|" + blobBase + "|" + dir
	if v, ok := p.cache.get(key); ok {
		p.renders.count(kind, fromCache)
		return v.(markdownView)
	}
	if why := markdownShape(src); why != "" {
		v := markdownView{Plain: why}
		p.cache.put(key, v, v.size())
		p.renders.count(kind, plainShape)
		return v
	}
	v, outcome := p.renders.run(r.Context(), kind, p.opts.ClientIP(r), key, func() (any, bool) { return p.cache.get(key) }, func() any {
		html := renderMarkdown(src, blobBase, dir)
		if len(html) > maxMarkdownHTML {
			return markdownView{Plain: "its HTML would be larger than " + humanSize(maxMarkdownHTML)}
		}
		return markdownView{HTML: html}
	}, func(v any) { p.cache.put(key, v, v.(markdownView).size()) })
	switch outcome {
	case fromCache:
		p.renders.count(kind, outcome)
		return v.(markdownView)
	case rendered:
		mv := v.(markdownView)
		if mv.Plain != "" {
			outcome = plainTooBig
		}
		p.renders.count(kind, outcome)
		return mv
	case plainBusy:
		p.renders.count(kind, outcome)
		return markdownView{Plain: "the server is busy rendering other files; reload in a moment"}
	case plainBudget:
		p.renders.count(kind, outcome)
		return markdownView{Plain: "it was not rendered within " + p.opts.RenderBudget.String() + "; reload in a moment"}
	}
	p.renders.count(kind, outcome)
	return markdownView{Plain: "it could not be rendered"}
}

// renderMarkdown turns Markdown into sanitised HTML. Relative links are
// made to point at the file view of what they name: blobBase is the URL
// path of the file views of the revision (<repo>/blob/<rev>), "" to leave
// links alone, and dir the Markdown file's directory in it.
func renderMarkdown(src []byte, blobBase, dir string) template.HTML {
	doc := markdown.Parser().Parse(text.NewReader(src))
	if blobBase != "" {
		_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if l, ok := n.(*ast.Link); ok && entering {
				l.Destination = []byte(relativeLink(string(l.Destination), blobBase, dir))
			}
			return ast.WalkContinue, nil
		})
	}
	var buf bytes.Buffer
	if err := markdown.Renderer().Render(&buf, src, doc); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	return template.HTML(sanitiser.SanitizeBytes(buf.Bytes()))
}

// relativeLink resolves a link written in a file of directory dir
// ("docs/x.md", "../y") to its file view under blobBase; absolute URLs,
// absolute paths and fragments are kept, and so is a path climbing out of
// the repository.
func relativeLink(dest, blobBase, dir string) string {
	u, err := url.Parse(dest)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path == "" || strings.HasPrefix(u.Path, "/") {
		return dest
	}
	p := path.Clean(path.Join(dir, u.Path))
	if p == ".." || strings.HasPrefix(p, "../") {
		return dest
	}
	out := blobBase + "/" + escapePath(p)
	if u.Fragment != "" {
		out += "#" + url.PathEscape(u.Fragment)
	}
	return out
}

// readmeNames are the files shown as the README, in order of preference.
var readmeNames = []string{"readme.md", "readme.markdown", "readme", "readme.txt", "readme.rst", "readme.org"}

func isMarkdown(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".md") || strings.HasSuffix(n, ".markdown")
}

// pickReadme returns the root entry to show as the README.
func pickReadme(root []treeEntry) (treeEntry, bool) {
	for _, want := range readmeNames {
		for _, e := range root {
			if e.Type == "blob" && strings.ToLower(e.Name) == want {
				return e, true
			}
		}
	}
	return treeEntry{}, false
}
