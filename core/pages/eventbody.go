package pages

import (
	"context"
	"html/template"
	"net/http"

	"github.com/nbd-wtf/go-nostr"
)

// eventHTML renders the content of an event (an issue, a PR description, a
// comment, a cover note, a review): Markdown written by anyone, sanitised
// like a README and bounded like one (bounds.go); the HTML is cached by
// event id, which names the content for good.
func (p *Pages) eventHTML(_ context.Context, r *http.Request, evt *nostr.Event) template.HTML {
	if evt.Content == "" {
		return ""
	}
	return p.markdownOrText(r, "event:"+evt.ID, []byte(evt.Content))
}

// markdownOrText renders src, named by key in the render cache, as
// Markdown, or as preformatted text when a render bound says no.
func (p *Pages) markdownOrText(r *http.Request, key string, src []byte) template.HTML {
	if v := p.markdown(r, key, src, "", ""); v.HTML != "" {
		return v.HTML
	}
	return template.HTML(`<pre class="text">` + template.HTMLEscapeString(string(src)) + `</pre>`)
}
