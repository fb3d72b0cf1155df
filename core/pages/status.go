package pages

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/grasp-dev/grasp/core/githttp"
	"github.com/grasp-dev/grasp/core/hosting"
	"github.com/grasp-dev/grasp/core/nip34"
	"github.com/grasp-dev/grasp/core/purgatory"
	"github.com/grasp-dev/grasp/core/purgatory/hunt"
)

// What only this server can show about a repository (issue 26 part 5): the
// signed state against the served refs, what waits in purgatory and what
// the hunter does about it, the other servers the announcement lists with
// how syncing with them went, the maintainer graph, and why the last
// pushes were refused. Everything is read from the parts' own snapshots
// through Facts; nothing here keeps state of its own.

// Facts are the parts' read-only views; a nil field is a part this server
// does not run here (the hunter and sync run on the leader instance), and
// its section says so.
type Facts struct {
	// Served compares the served refs with the authoritative state
	// (hosting.Hosting.Served).
	Served func(ctx context.Context, repo nip34.RepoRef, refs map[string]string) (hosting.Served, error)
	// Waiting lists what waits in purgatory for the repository's git data,
	// at most max, with the total (purgatory.Purgatory.WaitingFor).
	Waiting func(repo nip34.RepoRef, max int) ([]purgatory.Entry, int)
	// Hunt is what the git-data hunter does for the repository
	// (hunt.Hunter.Repo): queued is false when the repository is not in its
	// queue, runs false when the hunter does not run on this instance.
	Hunt func(ctx context.Context, repo nip34.RepoRef) (h hunt.RepoHunt, queued, runs bool)
	// Relay is sync's health record of a relay URL; false: none.
	Relay func(url string) (RelayHealth, bool)
	// Refusals are the repository's last refused pushes, newest first
	// (githttp.Refusals.Last).
	Refusals func(repo nip34.RepoRef) []githttp.Refusal
}

// RelayHealth is how syncing with one relay goes.
type RelayHealth struct {
	Status      string // "healthy", "backoff", "dead"
	Failures    int    // consecutive
	LastOK      time.Time
	LastFailure time.Time
}

// maxStatusHeld and maxStatusServers bound the lists of the status page;
// maxStatusCounted the held events read to count them.
const (
	maxStatusHeld    = 20
	maxStatusServers = 20
	maxStatusCounted = 1000
)

var statusTmpl = pageTemplate("status", stateTmpl+`{{template "head" .}}
<p class="muted">What this server knows about the repository and no web client can show.</p>
<h2 id="state">Signed state and served refs</h2>
{{template "stateline" .S}}
{{with .S.Served}}{{if .Differs}}<div class="scroll"><table><tr><th>Ref</th><th>Signed</th><th>Served</th></tr>
{{range .Differs}}<tr><td><code>{{.Ref}}</code></td><td>{{if .Signed}}<code>{{short .Signed}}</code>{{else}}<span class="muted">absent</span>{{end}}</td><td>{{if .Served}}<code>{{short .Served}}</code>{{else}}<span class="muted">absent</span>{{end}}</td></tr>
{{end}}</table></div>
<p class="muted">{{if .Missing}}{{.Missing}} object{{if ne .Missing 1}}s{{end}} of the signed state {{if eq .Missing 1}}is{{else}}are{{end}} not here yet: the hunter fetches them from the repository's other servers (below), then the refs move to the state.{{else}}Every object of the signed state is here: the next push, hunt or integrity check aligns the refs.{{end}}</p>{{end}}
{{if .Held}}<p>Newer states wait in purgatory for their git data:</p>
<ul>{{range .Held}}<li>state <code>{{short .EventID}}</code> by <code title="{{npub .Author}}">{{shortnpub .Author}}</code>, signed {{date .Signed}}{{if not .HeldSince.IsZero}}, waiting since {{date .HeldSince}}{{end}} ({{.Refs}} refs)</li>{{end}}</ul>{{end}}{{end}}
<h2 id="purgatory">Waiting in purgatory</h2>
{{if not .S.WaitingKnown}}<p class="muted">Purgatory is not readable from here.</p>
{{else if .S.Waiting}}<p>{{.S.WaitingTotal}} event{{if ne .S.WaitingTotal 1}}s wait{{else}} waits{{end}} for this repository's git data{{if gt .S.WaitingTotal (len .S.Waiting)}} (the oldest {{len .S.Waiting}} are listed){{end}}:</p>
<div class="scroll"><table><tr><th>Event</th><th>By</th><th>Waiting since</th><th>Expires</th><th>Needs</th></tr>
{{range .S.Waiting}}<tr><td>{{.What}} <code>{{short .ID}}</code></td><td><code title="{{.By.Npub}}">{{.By.Short}}</code></td><td class="muted">{{date .Since}}</td><td class="muted">{{date .Expires}}</td><td>{{if .Needs}}{{.Needs}} object{{if ne .Needs 1}}s{{end}}{{else}}the first push{{end}}</td></tr>
{{end}}</table></div>{{else}}<p class="muted">Nothing waits for this repository's git data.</p>{{end}}
<h2 id="hunter">The git-data hunter</h2>
{{if not .S.HuntKnown}}<p class="muted">The hunter does not run on this instance (it runs on the leader), or is off.</p>
{{else if not .S.Hunt}}<p class="muted">Not hunting: no object of this repository is missing.</p>
{{else}}{{with .S.Hunt}}<p>{{.Missing}} object{{if ne .Missing 1}}s{{end}} missing. {{if .Hunting}}{{if .Waiting}}A round waits for a fetch slot (per-host throttle).{{else}}Fetching now.{{end}}{{else}}{{if .Attempts}}{{.Attempts}} round{{if ne .Attempts 1}}s{{end}} left objects missing; next{{else}}First{{end}} round at {{date .Next}}.{{end}}</p>
{{if .Sources}}<div class="scroll"><table><tr><th>Source</th><th>Last fetch</th></tr>
{{range .Sources}}<tr><td><code>{{.URL}}</code></td><td>{{if .Self}}<span class="muted">this server, never fetched from</span>{{else}}{{if .Result}}{{.Result}}, {{date .At}}{{else}}<span class="muted">not tried yet</span>{{end}}{{if .Skipped}} · <span class="badge st-closed">host unreachable, skipped for now</span>{{end}}{{end}}</td></tr>
{{end}}</table></div>{{else}}<p class="muted">The announcement names no other git server to fetch from: the data arrives by a push.</p>{{end}}{{end}}{{end}}
<h2 id="servers">Other servers holding the data</h2>
{{if .S.Servers}}<div class="scroll"><table><tr><th>Server</th><th>Git</th><th>Relay sync</th><th>Hunter</th></tr>
{{range .S.Servers}}<tr><td>{{.Host}}{{if .GRASP}} <span class="badge">GRASP</span>{{end}}</td><td>{{if .Clone}}<code>{{.Clone}}</code>{{else}}<span class="muted">—</span>{{end}}</td><td>{{if .Relay}}<code>{{.Relay}}</code>{{if .Health}} <span class="badge {{.HealthClass}}">{{.Health.Status}}</span>{{if not .Health.LastOK.IsZero}} last connected {{date .Health.LastOK}}{{end}}{{if .Health.Failures}}, {{.Health.Failures}} failure{{if ne .Health.Failures 1}}s{{end}} since {{date .Health.LastFailure}}{{end}}{{else}} <span class="muted">not synced from here</span>{{end}}{{else}}<span class="muted">—</span>{{end}}</td><td>{{if .Fetch}}{{.Fetch}}{{else}}<span class="muted">—</span>{{end}}</td></tr>
{{end}}</table></div>{{if .S.ServersCut}}<p class="muted">The first {{len .S.Servers}} servers are listed.</p>{{end}}
{{else}}<p class="muted">The announcement lists no other server: this one holds the only copy here.</p>{{end}}
<h2 id="maintainers">Maintainers</h2>
{{with .R.Meta}}<ul class="plain">
<li>Owner: <code title="{{.Owner.Npub}}">{{.Owner.Npub}}</code></li>
{{range .Maintainers}}<li>Confirmed maintainer (lists the owner's repository and is listed back): <code>{{.Npub}}</code></li>{{end}}
{{range .Invited}}<li>Invited (named by a maintainer, has not listed back yet; their states do not count): <code>{{.Npub}}</code></li>{{end}}
{{range .Moderators}}<li>Moderator (statuses, labels and cover notes; never a state or a push): <code>{{.Npub}}</code></li>{{end}}
</ul>{{end}}
<h2 id="refusals">Refused pushes</h2>
{{if not .S.RefusalsKnown}}<p class="muted">Refused pushes are not recorded here.</p>
{{else if .S.Refusals}}<ul>{{range .S.Refusals}}<li>{{date .At}}: {{.Why}} ({{.Refs}} ref{{if ne .Refs 1}}s{{end}})</li>{{end}}</ul>
<p class="muted">Anyone may try a push, so a refusal here may be a stranger's. The pusher's git printed the full reason; this page names its kind only, never the refs, commits or address of the push. Kept in memory by this instance since its start.</p>
{{else}}<p class="muted">No push has been refused since this instance started.</p>{{end}}`)

// stateTmpl is the one sentence about the signed state, on the status
// page and the summary.
const stateTmpl = `{{define "stateline"}}{{if .ServedErr}}<p class="muted">The signed state could not be read.</p>
{{else if not .Served}}<p class="muted">Not compared.</p>
{{else}}{{with .Served}}{{if not .Signed}}<p>No state has been signed for this repository: pushes are refused until a maintainer publishes one (ngit does on <code>git push</code>).</p>
{{else if not .Differs}}<p><span class="badge st-open">in sync</span> The served branches and tags are those of the state signed by <code title="{{npub .Signed.Author}}">{{shortnpub .Signed.Author}}</code> on {{date .Signed.Signed}}.</p>
{{else}}<p><span class="badge st-closed">differs</span> {{len .Differs}} ref{{if ne (len .Differs) 1}}s differ{{else}} differs{{end}} from the state signed by <code title="{{npub .Signed.Author}}">{{shortnpub .Signed.Author}}</code> on {{date .Signed.Signed}}, since that state.</p>{{end}}{{end}}{{end}}{{end}}`

// statusView is what the status page shows.
type statusView struct {
	Served        *hosting.Served
	ServedErr     bool
	Waiting       []heldRow
	WaitingTotal  int
	WaitingKnown  bool
	Hunt          *hunt.RepoHunt
	HuntKnown     bool
	Servers       []serverRow
	ServersCut    bool
	Refusals      []refusalRow
	RefusalsKnown bool
	LatestRefusal *refusalRow
}

type heldRow struct {
	What, ID       string
	By             person
	Since, Expires time.Time
	Needs          int
}

type serverRow struct {
	Host         string
	GRASP        bool
	Clone, Relay string
	Health       *RelayHealth
	HealthClass  string
	Fetch        string // the hunter's last fetch from Clone
}

type refusalRow struct {
	At   time.Time
	Why  string
	Refs int
}

// statusPage serves /<repo>/status.
func (p *Pages) statusPage(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef) {
	ctx := r.Context()
	rv := p.repoView(ctx, repo, "status")
	st, err := p.state(ctx, repo)
	if err != nil {
		p.gitError(w, r, err)
		return
	}
	s := p.statusOf(ctx, repo, rv.Meta, st, true)
	d := struct {
		R repoView
		S statusView
	}{R: rv, S: s}
	p.render(w, r, http.StatusOK, rv.Meta.Name+": on this server", p.crumbs(rv, link{Text: "on this server"}), statusTmpl, d)
}

// statusOf gathers the status; full adds the hunter and the other
// servers (the summary shows the state, purgatory's count and the last
// refusal only).
func (p *Pages) statusOf(ctx context.Context, repo nip34.RepoRef, m repoMeta, st repoState, full bool) statusView {
	f := p.opts.Facts
	var s statusView
	if f.Served != nil {
		// it may run git (objects of a differing state): one of the pages'
		// git slots
		if release, err := p.slot(ctx); err == nil {
			sv, err := f.Served(ctx, repo, st.refs)
			release()
			if err != nil {
				p.log.Warn("comparing the served refs with the signed state failed", "repo", repo.URLPath(), "error", err)
				s.ServedErr = true
			} else {
				s.Served = &sv
			}
		}
	}
	if f.Waiting != nil {
		// counted among those a stranger may read, so a private event
		// changes no number here
		s.WaitingKnown = true
		held, _ := f.Waiting(repo, maxStatusCounted)
		for _, e := range held {
			if !p.public(ctx, e.Event) {
				continue
			}
			if s.WaitingTotal++; len(s.Waiting) < maxStatusHeld {
				s.Waiting = append(s.Waiting, heldRow{What: nip34.KindName(e.Event.Kind), ID: e.Event.ID, By: personOf(e.Event.PubKey),
					Since: e.HeldAt.UTC(), Expires: e.Expires.UTC(), Needs: len(e.Needs)})
			}
		}
	}
	if f.Refusals != nil {
		s.RefusalsKnown = true
		for _, x := range f.Refusals(repo) {
			s.Refusals = append(s.Refusals, refusalRow{At: x.At.UTC(), Why: refusalText(x.Class), Refs: x.Refs})
		}
		if len(s.Refusals) > 0 {
			s.LatestRefusal = &s.Refusals[0]
		}
	}
	if !full {
		return s
	}
	var fetched map[string]hunt.SourceResult
	if f.Hunt != nil {
		h, ok, runs := f.Hunt(ctx, repo)
		s.HuntKnown = runs
		if ok {
			s.Hunt = &h
			fetched = map[string]hunt.SourceResult{}
			for _, src := range h.Sources {
				fetched[src.URL] = src
			}
		}
	}
	s.Servers, s.ServersCut = p.servers(m, repo, fetched)
	return s
}

// servers groups the announcement's clone and relay URLs by host, this
// server left out: a host with both is a GRASP server.
func (p *Pages) servers(m repoMeta, repo nip34.RepoRef, fetched map[string]hunt.SourceResult) ([]serverRow, bool) {
	svc := p.opts.Service
	byHost := map[string]*serverRow{}
	var order []string
	row := func(raw string) *serverRow {
		host, _, ok := nip34.EndpointHost(raw)
		if !ok {
			return nil
		}
		if byHost[host] == nil {
			byHost[host] = &serverRow{Host: host}
			order = append(order, host)
		}
		return byHost[host]
	}
	for _, c := range m.Clone {
		if svc.ListsClone(c, repo.Pubkey, repo.Identifier) {
			continue
		}
		if sr := row(c); sr != nil && sr.Clone == "" {
			sr.Clone = c
			if res, ok := fetched[c]; ok && res.Result != "" {
				sr.Fetch = res.Result + ", " + res.At.UTC().Format("2006-01-02 15:04")
			}
		}
	}
	for _, u := range m.Relays {
		if svc.ListsRelay(u) {
			continue
		}
		if sr := row(u); sr != nil && sr.Relay == "" {
			sr.Relay = u
			if p.opts.Facts.Relay != nil {
				if n, err := nip34.NormalizeRelayURL(u); err == nil {
					if h, ok := p.opts.Facts.Relay(n); ok {
						sr.Health = &h
						sr.HealthClass = map[string]string{"healthy": "st-open", "backoff": "st-draft", "dead": "st-closed"}[h.Status]
					}
				}
			}
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := byHost[order[i]], byHost[order[j]]
		return a.Clone != "" && a.Relay != "" && !(b.Clone != "" && b.Relay != "")
	})
	out := make([]serverRow, 0, min(len(order), maxStatusServers))
	for _, h := range order[:min(len(order), maxStatusServers)] {
		sr := byHost[h]
		sr.GRASP = sr.Clone != "" && sr.Relay != ""
		out = append(out, *sr)
	}
	return out, len(order) > maxStatusServers
}

// refusalText says what a refusal class means, in words the owner can act
// on; the class set is core/githttp's.
func refusalText(class string) string {
	switch class {
	case githttp.ClassNoState:
		return "no state signed by a maintainer was known for the pushed refs: publish the state event before pushing (ngit does)"
	case githttp.ClassMismatch:
		return "the pushed branches and tags were not those of the latest signed state"
	case githttp.ClassStale:
		return "a ref had moved since the pusher fetched: fetch and push again"
	case githttp.ClassBadRef:
		return "a ref name git or GRASP does not allow here"
	case githttp.ClassPRMismatch:
		return "a refs/nostr/<id> push was not the tip its PR event names"
	case githttp.ClassMalformed:
		return "the push's command list could not be read"
	case "gate":
		return "once its data had arrived, the push no longer matched the latest signed state, or lacked objects"
	case "git":
		return "git refused the pushed data (a check of its objects failed)"
	case "read_only":
		return "this server keeps the repository as a read-only archive"
	case "disk":
		return "the server was low on disk space"
	case "quota":
		return "a placeholder quota for refs/nostr/<id> pushes was full"
	case "busy", "busy_ip":
		return "the server had no git process free"
	case "slow_body", "too_large":
		return "the push was too slow or too large for the server's limits"
	}
	return "the server could not decide (" + class + "); see its log"
}
