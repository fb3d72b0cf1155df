package pages

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
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

// renderMarkdown turns Markdown into sanitised HTML.
func renderMarkdown(src []byte) template.HTML {
	var buf bytes.Buffer
	if err := markdown.Convert(src, &buf); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	return template.HTML(sanitiser.SanitizeBytes(buf.Bytes()))
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
