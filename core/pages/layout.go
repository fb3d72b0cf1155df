package pages

import (
	"bytes"
	"html/template"
	"net/http"
)

// style is the one stylesheet of every page, inline so a page is one
// request and works without anything else loading. Every page fits a
// phone's 390 px (issue 26 part 3): long words (npubs, object ids, URLs)
// break where they must, code scrolls in its own box, and a table of
// anyone's Markdown scrolls in its own box; core/server's browser test
// measures each page at 390 and 1280 px.
const style = `
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa;--accent:#662d91;--ok:#1a7f37;--bad:#cf222e;--draft:#59636e;--merged:#8250df}
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);line-height:1.5;overflow-wrap:anywhere}
header.site{border-bottom:1px solid var(--line);background:var(--soft)}
header.site div,main,footer{max-width:64rem;margin:0 auto;padding:.6rem 1rem}
header.site a.home{font-weight:600;color:var(--fg);text-decoration:none;display:inline-flex;align-items:center;gap:.4rem}
header.site img{width:24px;height:24px;border-radius:4px}
nav.crumbs{color:var(--muted);font-size:.95rem}
nav.crumbs a{color:var(--accent)}
a{color:var(--accent)}
h1{font-size:1.6rem;margin:.8rem 0 .3rem}
h2{font-size:1.15rem;margin:1.4rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.88rem}
code{background:var(--soft);padding:0 .25em;border-radius:3px}
pre{background:var(--soft);padding:.7rem;overflow:auto;border-radius:6px;border:1px solid var(--line);overflow-wrap:normal}
table{border-collapse:collapse;width:100%}
td,th{padding:.3rem .5rem;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;background:var(--soft);overflow-wrap:normal}
tr>td:first-child>a>code{white-space:nowrap;overflow-wrap:normal}
.muted{color:var(--muted)}
.tabs{display:flex;flex-wrap:wrap;gap:.2rem 1rem;margin:.6rem 0;border-bottom:1px solid var(--line);padding-bottom:.3rem}
.tabs a{text-decoration:none}
.tabs a.on{font-weight:600;color:var(--fg)}
.badge{display:inline-block;font-size:.8rem;padding:0 .45rem;border-radius:1rem;border:1px solid var(--line);color:var(--muted)}
.badge.head{border-color:var(--accent);color:var(--accent)}
.st-open{color:var(--ok);border-color:var(--ok)}
.st-closed{color:var(--bad);border-color:var(--bad)}
.st-merged{color:var(--merged);border-color:var(--merged)}
.st-draft{color:var(--draft)}
.readme{border:1px solid var(--line);border-radius:6px;padding:0 1rem}
.readme img{max-width:100%}
.readme table,.post table,.comment table{display:block;width:max-content;max-width:100%;overflow-x:auto}
pre.file{line-height:1.4}
pre.code{padding:.5rem 0;line-height:1.45}
pre.code .line{display:block;padding-right:.7rem}
pre.code .line:target{background:#fff8c5}
pre.code a.ln{display:inline-block;min-width:3.2em;padding:0 .9em 0 .4em;text-align:right;color:var(--muted);text-decoration:none;user-select:none;-webkit-user-select:none}
p.actions{margin-top:-.3rem}
pre.blame .line.start{border-top:1px solid var(--line)}
pre.blame .bl{display:inline-block;width:19ch;padding-left:.4rem;color:var(--muted);user-select:none;-webkit-user-select:none}
dl.clone{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.3rem .8rem;margin:.4rem 0}
dl.clone dt{font-weight:600}
dl.clone dd{margin:0}
code.copy{user-select:all;-webkit-user-select:all;cursor:text}
pre.diff .add{color:var(--ok)}
pre.diff .del{color:var(--bad)}
pre.diff .hunk{color:var(--accent)}
pre.diff .meta{color:var(--muted);font-weight:600}
form.search input{padding:.3rem .5rem;border:1px solid var(--line);border-radius:4px;width:16rem;max-width:65%}
form.search button{padding:.3rem .7rem}
ul.plain{list-style:none;padding:0}
footer{color:var(--muted);font-size:.85rem;border-top:1px solid var(--line);margin-top:2rem}
.count{font-size:.8rem;color:var(--muted);background:var(--soft);border-radius:1rem;padding:0 .4rem}
.scroll{overflow-x:auto}
.post,.comment{border:1px solid var(--line);border-radius:6px;padding:0 .8rem;margin:.6rem 0;overflow-wrap:anywhere}
.post img,.comment img{max-width:100%}
.post pre,.comment pre{max-width:100%}
.cover{background:var(--soft)}
.comment>p.muted{font-size:.85rem;margin:.4rem 0}
.d1{margin-left:.8rem}.d2{margin-left:1.6rem}.d3{margin-left:2.4rem}.d4{margin-left:3.2rem}.d5{margin-left:4rem}.d6{margin-left:4.8rem}
table.files td.num{white-space:nowrap;text-align:right}
.add{color:var(--ok)}.del{color:var(--bad)}
`

// layoutTmpl is the page around a body: "top" is written, then the body,
// then "bottom", so a page is built once, in its body's buffer (audit
// 2026-11b, F29: the body was built, then copied into the layout).
var layoutTmpl = template.Must(template.New("layout").Parse(`{{define "top"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<link rel="icon" type="image/png" href="{{.Base}}/icon.png">
{{range .Feeds}}<link rel="alternate" type="application/atom+xml" title="{{.Text}}" href="{{.Href}}">
{{end}}<style>` + style + `</style>
</head><body>
<header class="site"><div><a class="home" href="{{.Base}}/"><img src="{{.Base}}/icon.png" alt="">{{.Name}}</a>
{{if .Crumbs}}<nav class="crumbs">{{range $i, $c := .Crumbs}}{{if $i}} / {{end}}{{if $c.Href}}<a href="{{$c.Href}}">{{$c.Text}}</a>{{else}}{{$c.Text}}{{end}}{{end}}</nav>{{end}}
</div></header>
<main>
{{end}}{{define "bottom"}}
</main>
<footer><a href="https://github.com/grasp-dev/grasp">grasp</a> {{.Version}} · <a href="{{.Base}}/">{{.Name}}</a> · <a href="{{.Base}}/nip11.json">NIP-11</a></footer>
</body></html>
{{end}}`))

type link struct {
	Text string
	Href string
}

type layout struct {
	Title, Name, Version, Base string
	Crumbs                     []link
	// Feeds are the Atom feeds of the repository a page shows, named in
	// its head for feed readers and browsers (<link rel="alternate">).
	Feeds []link
}

// feedsOf are the Atom feeds of the repository whose page r asks for
// (ServeHTTP puts its path in the context), none for other pages.
func feedsOf(r *http.Request) []link {
	base, _ := r.Context().Value(shownRepoKey{}).(string)
	if base == "" {
		return nil
	}
	return []link{{Text: "Commits", Href: base + "/feed/commits"}, {Text: "Issues", Href: base + "/feed/issues"},
		{Text: "Pull requests and patches", Href: base + "/feed/prs"}}
}

// render writes one page: body is executed into the layout.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, title string, crumbs []link, body *template.Template, data any) {
	var buf bytes.Buffer
	if err := body.Execute(&buf, data); err != nil {
		p.log.Warn("rendering a page failed", "path", r.URL.Path, "error", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("<h1>Internal error</h1><p>This page could not be rendered.</p>")
	}
	p.write(w, r, status, title, crumbs, buf.Bytes())
}

func (p *Pages) write(w http.ResponseWriter, r *http.Request, status int, title string, crumbs []link, body []byte) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Pages carry no script of ours and must run none of anyone's: README
	// HTML is sanitised, and this is the second fence. No page may be
	// framed by another site (audit F32), X-Frame-Options for browsers
	// older than frame-ancestors.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; img-src * data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	name := p.opts.Name
	if name == "" {
		name = "grasp"
	}
	if title == "" {
		title = name
	} else {
		title += " – " + name
	}
	l := layout{Title: title, Name: name, Version: p.opts.Version, Base: p.opts.Service.Path, Crumbs: crumbs}
	if status == http.StatusOK {
		l.Feeds = feedsOf(r)
	}
	err := layoutTmpl.ExecuteTemplate(w, "top", l)
	if err == nil {
		_, err = w.Write(body)
	}
	if err == nil {
		err = layoutTmpl.ExecuteTemplate(w, "bottom", l)
	}
	if err != nil {
		p.log.Debug("writing a page failed", "path", r.URL.Path, "error", err)
	}
}

var errorTmpl = template.Must(template.New("error").Parse(`<h1>{{.Heading}}</h1>
<p>{{.Text}}</p>
<p><a href="{{.Base}}/">Back to the hosted repositories</a></p>`))

func (p *Pages) errorPage(w http.ResponseWriter, r *http.Request, status int, text string) {
	heading := http.StatusText(status)
	if status == http.StatusNotFound {
		heading = "Not found"
	}
	p.render(w, r, status, heading, nil, errorTmpl, map[string]string{"Heading": heading, "Text": text, "Base": p.opts.Service.Path})
}

func (p *Pages) notFound(w http.ResponseWriter, r *http.Request) {
	p.errorPage(w, r, http.StatusNotFound, "Nothing is served at "+r.URL.Path+". Repositories hosted here live at "+p.opts.Service.BaseURL()+"/<npub>/<identifier>.git.")
}
