package pages

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

var landingTmpl = pageTemplate("landing", `<h1>{{.Name}}</h1>
{{if .Description}}<p>{{.Description}} (<a href="https://ngit.dev/grasp">GRASP</a>)</p>{{else}}
<p>A <a href="https://ngit.dev/grasp">GRASP</a> server: a Nostr relay for NIP-34 git collaboration
events and a git host whose pushes are authorised by signed Nostr repository-state events.</p>{{end}}
<ul>
<li>Nostr relay: <code>{{.RelayURL}}</code> (<a href="{{.Base}}/nip11.json">NIP-11 document</a>){{if .OtherRelayURLs}}; also at {{range $i, $u := .OtherRelayURLs}}{{if $i}}, {{end}}<code>{{$u}}</code>{{end}}{{end}}</li>
<li>Repositories: <code>{{.BaseURL}}/&lt;npub&gt;/&lt;identifier&gt;.git</code></li>
<li>Server: grasp {{.Version}}</li>
</ul>
<h2>Use it</h2>
<p>Install <a href="https://ngit.dev">ngit</a>, run <code>ngit init</code> in your repository and
choose this server ({{.RelayURL}}) as one of its GRASP servers; <code>git push</code> then sends
your commits here once the signed state event is accepted. Issues and pull requests are
discussed with a git-nostr client such as <a href="https://gitworkshop.dev">gitworkshop.dev</a>.</p>
<p><a href="{{.Base}}/publishing">How to publish a repository here</a>: the events ngit sends and in
what order, what each answer of the server means, pull requests, and doing it without ngit.</p>
<h2 id="repositories">Hosted repositories</h2>
<form class="search" method="get" action="{{.Base}}/#repositories"><input type="search" name="q" value="{{.Query}}" placeholder="Search by name" aria-label="Search repositories by name"> <button type="submit">Search</button></form>
<p class="muted">{{.Total}} {{if .Query}}matching {{end}}repositor{{if eq .Total 1}}y{{else}}ies{{end}}{{if gt .Pages 1}}, page {{.Page}} of {{.Pages}}{{end}}.</p>
{{if .Repos}}<table><tr><th>Repository</th><th>Description</th><th>Owner</th></tr>
{{range .Repos}}<tr><td><a href="{{.Href}}">{{.Name}}</a>{{if ne .Name .ID}} <span class="muted">{{.ID}}</span>{{end}}</td><td>{{.Description}}</td><td class="muted" title="{{.Owner.Npub}}">{{.Owner.Short}}</td></tr>
{{end}}</table>{{end}}
<p>{{if .Prev}}<a href="{{.Prev}}">Previous page</a>{{end}} {{if .Next}}<a href="{{.Next}}">Next page</a>{{end}}</p>`)

type listedRepo struct {
	ID, Name, Description, Href string
	Owner                       person
}

func (p *Pages) landing(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > 200 {
		q = q[:200]
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	all, err := p.listed(ctx, q)
	if err != nil {
		p.log.Warn("listing repositories failed", "error", err)
	}
	per := p.opts.PerPage
	pages := max((len(all)+per-1)/per, 1)
	page = min(page, pages)
	shown := all[min((page-1)*per, len(all)):min(page*per, len(all))]
	svc := p.opts.Service
	d := struct {
		Name, Description, Version, Base, BaseURL, RelayURL, Query string
		OtherRelayURLs                                             []string
		Total, Page, Pages                                         int
		Prev, Next                                                 string
		Repos                                                      []listedRepo
	}{Name: p.opts.Name, Description: p.opts.Description, Version: p.opts.Version, Base: svc.Path,
		BaseURL: svc.BaseURL(), RelayURL: svc.RelayURL(), OtherRelayURLs: svc.RelayURLs()[1:], Query: q, Total: len(all), Page: page, Pages: pages}
	if d.Name == "" {
		d.Name = "grasp"
	}
	pageURL := func(n int) string {
		v := url.Values{}
		if q != "" {
			v.Set("q", q)
		}
		v.Set("page", strconv.Itoa(n))
		return svc.Path + "/?" + v.Encode() + "#repositories"
	}
	if page > 1 {
		d.Prev = pageURL(page - 1)
	}
	if page < pages {
		d.Next = pageURL(page + 1)
	}
	for _, repo := range shown {
		lr := listedRepo{ID: repo.Identifier, Name: repo.Identifier, Owner: personOf(repo.Pubkey),
			Href: svc.Path + git.RepoURLPath(repo.Npub(), repo.Identifier)}
		if e, ok := p.opts.Roster.View(ctx, repo.Identifier, "").Latest(repo.Pubkey); ok {
			if e.Name != "" {
				lr.Name = e.Name
			}
			lr.Description = e.Description
			if rs := []rune(lr.Description); len(rs) > 160 {
				lr.Description = string(rs[:160]) + "…"
			}
		}
		d.Repos = append(d.Repos, lr)
	}
	p.render(w, r, http.StatusOK, "", nil, landingTmpl, d)
}

// listed are the repositories the landing page lists, Shown ones only,
// whose identifier, owner npub or announced name contains q
// (case-insensitive), sorted by identifier then owner.
func (p *Pages) listed(ctx context.Context, q string) ([]nip34.RepoRef, error) {
	repos, err := p.opts.Repos.List(ctx)
	q = strings.ToLower(q)
	var names map[nip34.RepoRef]string
	if q != "" {
		names = p.names(ctx, repos)
	}
	out := repos[:0]
	for _, repo := range repos {
		if q != "" && !strings.Contains(strings.ToLower(repo.Identifier), q) && !strings.Contains(repo.Npub(), q) &&
			!strings.Contains(strings.ToLower(names[repo]), q) {
			continue
		}
		if p.Shown(ctx, repo) {
			out = append(out, repo)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Identifier != out[j].Identifier {
			return strings.ToLower(out[i].Identifier) < strings.ToLower(out[j].Identifier)
		}
		return out[i].Pubkey < out[j].Pubkey
	})
	return out, err
}

// maxNameSearch bounds how many repositories a search reads the announced
// names of; beyond it a search matches identifiers and owners only.
const maxNameSearch = 5000

// names are the announced names (the owner's latest stored announcement)
// of repos, read in one query by author: only an owner's own announcement
// names their repository.
func (p *Pages) names(ctx context.Context, repos []nip34.RepoRef) map[nip34.RepoRef]string {
	if len(repos) == 0 || len(repos) > maxNameSearch {
		return nil
	}
	owners := map[string]bool{}
	var authors, ds []string
	wanted := map[nip34.RepoRef]bool{}
	seenD := map[string]bool{}
	for _, r := range repos {
		wanted[r] = true
		if !owners[r.Pubkey] {
			owners[r.Pubkey] = true
			authors = append(authors, r.Pubkey)
		}
		if !seenD[r.Identifier] {
			seenD[r.Identifier] = true
			ds = append(ds, r.Identifier)
		}
	}
	evs, err := p.query(ctx, nostr.Filter{Kinds: []int{nip34.KindAnnouncement}, Authors: authors, Tags: nostr.TagMap{"d": ds}, Limit: 4 * len(repos)})
	if err != nil {
		p.log.Debug("reading announced names for a search failed", "error", err)
		return nil
	}
	latest := map[nip34.RepoRef]*nostr.Event{}
	names := map[nip34.RepoRef]string{}
	for _, evt := range evs {
		a, err := nip34.ParseAnnouncement(evt)
		if err != nil || !wanted[a.Repo()] {
			continue
		}
		if prev := latest[a.Repo()]; prev == nil || nip34.LaterEvent(evt, prev) {
			latest[a.Repo()] = evt
			names[a.Repo()] = a.Name
		}
	}
	return names
}
