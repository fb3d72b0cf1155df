package pages

import (
	"bytes"
	"html/template"
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
