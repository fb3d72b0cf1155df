package pages

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/nip34"
)

var discussionsTmpl = pageTemplate("discussions", `{{template "head" .}}
<p>{{if .All}}All {{.What}} · <a href="?">open only</a>{{else}}Open {{.What}} · <a href="?state=all">all, closed and merged included</a>{{end}}</p>
{{if .Items}}<div class="scroll"><table><tr><th>Status</th><th>Title</th><th>Author</th><th>Opened</th></tr>
{{range .Items}}<tr><td><span class="badge st-{{.Status}}">{{.Status}}</span></td><td><a href="{{.Page}}">{{.Title}}</a> <span class="muted">{{.Kind}}</span>{{if .Link}} · <a class="muted" href="{{.Link}}" rel="nofollow">web client</a>{{end}}</td><td class="muted" title="{{.Author.Npub}}">{{.Author.Short}}</td><td class="muted">{{date .When}}</td></tr>
{{end}}</table></div>{{else}}<p class="muted">No {{if not .All}}open {{end}}{{.What}} on this relay.</p>{{end}}
{{if not .Complete}}<p class="muted">Only the latest {{.Max}} are read.</p>{{end}}
<p class="muted">Statuses follow NIP-34: the latest status by the author, a maintainer or a moderator counts. Each title opens the discussion here; "web client" opens it in a git-nostr web client.</p>`)

type discussion struct {
	ID, Title, Kind, Status string
	Page                    string // the discussion's page here
	Link                    string // the discussion in the web client
	Author                  person
	When                    time.Time
	rank                    int
	body                    string // the start of its text, for the Atom feed (feed.go)
}

// maxDiscussions bounds what one page reads from the store.
const maxDiscussions = 500

func (p *Pages) discussions(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, tab string) {
	ctx := r.Context()
	m := p.meta(ctx, repo)
	what := "issues"
	if tab == "prs" {
		what = "pull requests and patches"
	}
	all := r.URL.Query().Get("state") == "all"
	items, complete, err := p.discussionList(ctx, m, tab)
	if err != nil {
		p.eventsError(w, r, err)
		return
	}
	open := openOnly(items)
	p.remember(repo, tab, open, complete)
	if !all {
		items = open
	}
	rv := p.repoViewOf(ctx, repo, tab, m)
	d := struct {
		R        repoView
		What     string
		All      bool
		Items    []discussion
		Complete bool
		Max      int
	}{R: rv, What: what, All: all, Items: items, Complete: complete, Max: maxDiscussions}
	p.render(w, r, http.StatusOK, rv.Meta.Name+": "+what, p.crumbs(rv, link{Text: what}), discussionsTmpl, d)
}

// discussionList reads the roots of tab ("issues": 1621; "prs": 1618 and
// the first patch of each 1617 series) naming m's coordinates, with their
// current status, open ones first, each newest first; only events anyone
// may read (GRASP-08). complete is false when more roots exist than a list
// reads.
func (p *Pages) discussionList(ctx context.Context, m repoMeta, tab string) (items []discussion, complete bool, err error) {
	kinds := []int{nip34.KindIssue}
	if tab == "prs" {
		kinds = []int{nip34.KindPR, nip34.KindPatch}
	}
	roots, more, err := p.queryUpTo(ctx, nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"a": m.Coordinates}}, maxDiscussions)
	if err != nil {
		return nil, false, err
	}
	complete = !more
	var ids []string
	var keep []*nostr.Event
	speakers := m.speakers()
	for _, evt := range p.publicOnly(ctx, roots) {
		if evt.Kind == nip34.KindPatch {
			// a patch series is listed once, by its first patch
			if pt, err := nip34.ParsePatch(evt); err != nil || (!pt.Root && !pt.RootRevision && len(pt.Replies) > 0) {
				continue
			}
		}
		keep = append(keep, evt)
		ids = append(ids, evt.ID)
		if !slices.Contains(speakers, evt.PubKey) {
			speakers = append(speakers, evt.PubKey)
		}
	}
	var statuses []*nostr.Event
	if len(ids) > 0 {
		// only the statuses that can count: nobody else's can crowd them out
		statuses, _, err = p.queryUpTo(ctx, nostr.Filter{Kinds: []int{nip34.KindStatusOpen, nip34.KindStatusMerged, nip34.KindStatusClosed, nip34.KindStatusDraft},
			Tags: nostr.TagMap{"e": ids}, Authors: speakers}, 10*maxDiscussions)
		if err != nil {
			return nil, false, err
		}
		statuses = p.publicOnly(ctx, statuses)
	}
	byRoot := map[string][]*nostr.Event{}
	for _, s := range statuses {
		if st, err := nip34.ParseStatus(s); err == nil {
			for _, root := range st.Roots {
				byRoot[root] = append(byRoot[root], s)
			}
		}
	}
	base := p.repoPath(m.ref)
	out := make([]discussion, 0, len(keep))
	for _, evt := range keep {
		kind := nip34.CurrentStatus(evt.ID, evt.PubKey, m.roster, byRoot[evt.ID])
		d := discussion{ID: evt.ID, Title: titleOf(evt), Author: personOf(evt.PubKey), When: evt.CreatedAt.Time().UTC(),
			Status: statusName(kind, evt.Kind), rank: statusRank(kind), Page: base + "/" + tab + "/" + evt.ID, body: feedText(evt.Content)}
		if tab == "prs" { // the PRs tab tells PRs from patches; the issues tab has one kind
			d.Kind = nip34.KindName(evt.Kind)
		}
		nevent, err := nip19.EncodeEvent(evt.ID, firstN(m.Relays, 2), evt.PubKey)
		if err == nil {
			d.Link = m.WebClientURL + "/" + tab + "/" + nevent
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].rank != out[j].rank {
			return out[i].rank < out[j].rank
		}
		return out[i].When.After(out[j].When)
	})
	return out, complete, nil
}

func (p *Pages) query(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	ch, err := p.opts.Events.QueryEvents(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []*nostr.Event
	for e := range ch {
		if len(out) < f.Limit {
			out = append(out, e)
		}
	}
	return out, ctx.Err()
}

// queryUpTo reads the newest n events matching f, in as many queries as
// the store needs (it caps one query at its max_limit): each next query
// asks for what is older than the oldest seen. more is true when n were
// read and older ones may exist. Many events sharing one second beyond a
// store's cap end the reading early.
func (p *Pages) queryUpTo(ctx context.Context, f nostr.Filter, n int) (evs []*nostr.Event, more bool, err error) {
	seen := map[string]bool{}
	atOldest := 0 // events read of the second the next query starts at
	for len(evs) < n {
		f.Limit = n - len(evs) + atOldest
		page, err := p.query(ctx, f)
		if err != nil {
			return nil, false, err
		}
		added := 0
		for _, e := range page {
			if !seen[e.ID] && len(evs) < n {
				seen[e.ID] = true
				evs = append(evs, e)
				added++
			}
		}
		if added == 0 {
			return evs, false, nil
		}
		oldest := evs[len(evs)-1].CreatedAt
		atOldest = 0
		for _, e := range evs {
			oldest = min(oldest, e.CreatedAt)
		}
		for _, e := range evs {
			if e.CreatedAt == oldest {
				atOldest++
			}
		}
		f.Until = &oldest
	}
	return evs, true, nil
}

func statusName(status, kind int) string {
	switch status {
	case nip34.KindStatusMerged:
		if kind == nip34.KindIssue {
			return "resolved"
		}
		return "merged"
	case nip34.KindStatusClosed:
		return "closed"
	case nip34.KindStatusDraft:
		return "draft"
	}
	return "open"
}

func statusRank(status int) int {
	switch status {
	case nip34.KindStatusOpen:
		return 0
	case nip34.KindStatusDraft:
		return 1
	}
	return 2
}

// titleOf is an issue's subject tag, a patch's Subject: line, or the first
// line of the content, at most 120 characters.
func titleOf(evt *nostr.Event) string {
	title := ""
	if t := evt.Tags.Find("subject"); len(t) > 1 {
		title = t[1]
	}
	if title == "" && evt.Kind == nip34.KindPatch {
		for _, l := range strings.Split(evt.Content, "\n") {
			if s, ok := strings.CutPrefix(l, "Subject: "); ok {
				if i := strings.Index(s, "] "); strings.HasPrefix(s, "[") && i > 0 {
					s = s[i+2:]
				}
				title = s
				break
			}
		}
	}
	if title == "" {
		title, _, _ = strings.Cut(strings.TrimSpace(evt.Content), "\n")
	}
	if title == "" {
		title = "(untitled)"
	}
	if r := []rune(title); len(r) > 120 {
		title = string(r[:120]) + "…"
	}
	return title
}
