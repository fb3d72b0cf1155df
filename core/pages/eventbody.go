package pages

import (
	"context"
	"html/template"
	"net/http"

	"github.com/nbd-wtf/go-nostr"
)

// eventHTML renders the content of an event (an issue, a PR description, a
// comment, a cover note, a review): Markdown written by anyone, sanitised
// like a README. The HTML is cached by event id, which names the content
// for good.
func (p *Pages) eventHTML(ctx context.Context, r *http.Request, evt *nostr.Event) template.HTML {
	if evt.Content == "" {
		return ""
	}
	key := "event|" + evt.ID
	if v, ok := p.cache.get(key); ok {
		return v.(template.HTML)
	}
	html := p.markdownOrText(ctx, r, []byte(evt.Content))
	p.cache.put(key, html, len(html))
	return html
}

// markdownOrText renders src as Markdown when it is small enough, else as
// preformatted text.
// TODO(discuss): call the bounded renderer of audit F30 once it is on main.
func (p *Pages) markdownOrText(_ context.Context, _ *http.Request, src []byte) template.HTML {
	if len(src) > 4<<10 {
		return template.HTML(`<pre class="text">` + template.HTMLEscapeString(string(src)) + `</pre>`)
	}
	return renderMarkdown(src, "", "")
}
