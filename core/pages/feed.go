package pages

import (
	"encoding/xml"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/nip34"
)

// Atom feeds (RFC 4287) of a repository: its commits (of HEAD's branch or
// any branch, tag or commit), its issues and its PRs and patches, each
// entry linking to its page here. Links are absolute, under the public
// URL. core/pages/feed_test.go reads them with a feed parser.

// feedEntries bounds the entries of one feed.
const feedEntries = 50

type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string      `xml:"id"`
	Title     string      `xml:"title"`
	Subtitle  string      `xml:"subtitle,omitempty"`
	Updated   string      `xml:"updated"`
	Links     []atomLink  `xml:"link"`
	Generator string      `xml:"generator"`
	Entries   []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomPerson struct {
	Name  string `xml:"name"`
	Email string `xml:"email,omitempty"`
	URI   string `xml:"uri,omitempty"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Body string `xml:",chardata"`
}

type atomEntry struct {
	ID        string     `xml:"id"`
	Title     string     `xml:"title"`
	Updated   string     `xml:"updated"`
	Published string     `xml:"published,omitempty"`
	Author    atomPerson `xml:"author"`
	Links     []atomLink `xml:"link"`
	Summary   *atomText  `xml:"summary,omitempty"`
	Content   *atomText  `xml:"content,omitempty"`
}

func atomTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// absolute is the public URL of a path under the base path (as links
// here are written).
func (p *Pages) absolute(path string) string {
	return strings.TrimSuffix(p.opts.Service.BaseURL(), p.opts.Service.Path) + path
}

// feed serves feed/commits[/<rev>], feed/issues and feed/prs.
func (p *Pages) feed(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest string) {
	what, rev, _ := strings.Cut(rest, "/")
	var f atomFeed
	var ok bool
	switch what {
	case "commits":
		f, ok = p.commitsFeed(w, r, repo, rev)
	case "issues", "prs":
		if rev != "" {
			p.notFound(w, r)
			return
		}
		f, ok = p.discussionsFeed(w, r, repo, what)
	default:
		p.notFound(w, r)
		return
	}
	if !ok {
		return
	}
	f.Generator = "grasp " + p.opts.Version
	f.Links = append(f.Links, atomLink{Rel: "self", Type: "application/atom+xml", Href: p.absolute(p.opts.Service.Path + r.URL.EscapedPath())})
	if f.Updated == "" {
		// no entries: the feed is as new as the request
		f.Updated = atomTime(p.clk.Now())
	}
	w.Header().Set("Content-Type", "application/atom+xml; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		return
	}
	w.Write([]byte(xml.Header))
	enc := xml.NewEncoder(w)
	enc.Indent("", " ")
	if err := enc.Encode(f); err != nil {
		p.log.Debug("writing a feed failed", "path", r.URL.Path, "error", err)
	}
}

// commitsFeed is the newest commits of rev ("": HEAD's branch).
func (p *Pages) commitsFeed(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest string) (atomFeed, bool) {
	ctx := r.Context()
	st, rev, oid, path, ok := p.at(w, r, repo, rest)
	if !ok {
		return atomFeed{}, false
	}
	if path != "" {
		p.notFound(w, r)
		return atomFeed{}, false
	}
	list, err := p.cachedLog(ctx, repo, oid, "", feedEntries, 0)
	if err != nil {
		p.gitError(w, r, err)
		return atomFeed{}, false
	}
	m := p.meta(ctx, repo)
	base := p.repoPath(repo)
	page := p.absolute(base + "/commits/" + escapePath(rev))
	f := atomFeed{ID: page, Title: m.Name + ": commits on " + strings.ToLower(revKind(st, rev)) + " " + rev, Subtitle: m.Description,
		Links: []atomLink{{Rel: "alternate", Type: "text/html", Href: page}}}
	for i, c := range list {
		if i == 0 {
			f.Updated = atomTime(c.When)
		}
		href := p.absolute(base + "/commit/" + c.OID)
		e := atomEntry{ID: href, Title: c.Subject, Updated: atomTime(c.When), Author: atomPerson{Name: c.Author, Email: c.Email},
			Links: []atomLink{{Rel: "alternate", Type: "text/html", Href: href}}}
		if c.Body != "" {
			e.Content = &atomText{Type: "text", Body: c.Body}
		}
		f.Entries = append(f.Entries, e)
	}
	return f, true
}

// discussionsFeed is the newest issues, or PRs and patch series, whatever
// their status, read as their list is (discussionList: only what anyone
// may read).
func (p *Pages) discussionsFeed(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, tab string) (atomFeed, bool) {
	ctx := r.Context()
	m := p.meta(ctx, repo)
	items, _, err := p.discussionList(ctx, m, tab)
	if err != nil {
		p.eventsError(w, r, err)
		return atomFeed{}, false
	}
	// newest first, whatever the status
	newest := make([]discussion, len(items))
	copy(newest, items)
	sortNewest(newest)
	what := "issues"
	if tab == "prs" {
		what = "pull requests and patches"
	}
	page := p.absolute(p.repoPath(repo) + "/" + tab + "?state=all")
	f := atomFeed{ID: page, Title: m.Name + ": " + what, Subtitle: m.Description,
		Links: []atomLink{{Rel: "alternate", Type: "text/html", Href: page}}}
	for i, d := range newest[:min(len(newest), feedEntries)] {
		if i == 0 {
			f.Updated = atomTime(d.When)
		}
		id := d.ID
		if note, err := nip19.EncodeNote(d.ID); err == nil {
			id = "nostr:" + note // NIP-21: the event's name for good
		}
		title := d.Title
		if d.Kind != "" {
			title = d.Kind + ": " + title
		}
		e := atomEntry{ID: id, Title: title + " (" + d.Status + ")", Updated: atomTime(d.When),
			Author: atomPerson{Name: d.Author.Short, URI: "nostr:" + d.Author.Npub},
			Links:  []atomLink{{Rel: "alternate", Type: "text/html", Href: p.absolute(d.Page)}}}
		if d.body != "" {
			e.Content = &atomText{Type: "text", Body: d.body}
		}
		f.Entries = append(f.Entries, e)
	}
	return f, true
}

// feedText is the start of an event's text for a feed entry: at most 2000
// characters.
func feedText(s string) string {
	if r := []rune(s); len(r) > 2000 {
		return string(r[:2000]) + "…"
	}
	return s
}

func sortNewest(list []discussion) {
	sort.SliceStable(list, func(i, j int) bool { return list[i].When.After(list[j].When) })
}
