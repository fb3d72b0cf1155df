package pages

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/nip34"
)

var discussionsTmpl = pageTemplate("discussions", `{{template "head" .}}
<p>{{if .All}}All {{.What}} · <a href="?">open only</a>{{else}}Open {{.What}} · <a href="?state=all">all, closed and merged included</a>{{end}}</p>
{{if .Items}}<table><tr><th>Status</th><th>Title</th><th>Author</th><th>Opened</th></tr>
{{range .Items}}<tr><td><span class="badge st-{{.Status}}">{{.Status}}</span></td><td><a href="{{.Link}}" rel="nofollow">{{.Title}}</a> <span class="muted">{{.Kind}}</span></td><td class="muted" title="{{.Author.Npub}}">{{.Author.Short}}</td><td class="muted">{{date .When}}</td></tr>
{{end}}</table>{{else}}<p class="muted">No {{if not .All}}open {{end}}{{.What}} on this relay.</p>{{end}}
<p class="muted">Statuses follow NIP-34: the latest status by the author, a maintainer or a moderator counts. Each link opens the discussion in a git-nostr web client.</p>`)

type discussion struct {
	ID, Title, Kind, Status, Link string
	Author                        person
	When                          time.Time
	rank                          int
}

// maxDiscussions bounds what one page reads from the store.
const maxDiscussions = 500

func (p *Pages) discussions(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, tab string) {
	ctx := r.Context()
	rv := p.repoView(ctx, repo, tab)
	kinds, what := []int{nip34.KindIssue}, "issues"
	if tab == "prs" {
		kinds, what = []int{nip34.KindPR, nip34.KindPatch}, "pull requests and patches"
	}
	all := r.URL.Query().Get("state") == "all"
	items, err := p.discussionList(ctx, rv.Meta, kinds, tab)
	if err != nil {
		p.log.Warn("reading discussions failed", "repo", repo.String(), "error", err)
		p.errorPage(w, r, http.StatusInternalServerError, "The relay's events could not be read.")
		return
	}
	if !all {
		open := items[:0]
		for _, it := range items {
			if it.Status == "open" || it.Status == "draft" {
				open = append(open, it)
			}
		}
		items = open
	}
	d := struct {
		R     repoView
		What  string
		All   bool
		Items []discussion
	}{R: rv, What: what, All: all, Items: items}
	p.render(w, r, http.StatusOK, rv.Meta.Name+": "+what, p.crumbs(rv, link{Text: what}), discussionsTmpl, d)
}

func (p *Pages) discussionList(ctx context.Context, m repoMeta, kinds []int, tab string) ([]discussion, error) {
	roots, err := p.query(ctx, nostr.Filter{Kinds: kinds, Tags: nostr.TagMap{"a": m.Coordinates}, Limit: maxDiscussions})
	if err != nil {
		return nil, err
	}
	var ids []string
	var keep []*nostr.Event
	for _, evt := range roots {
		if evt.Kind == nip34.KindPatch {
			// a patch series is listed once, by its first patch
			if pt, err := nip34.ParsePatch(evt); err != nil || (!pt.Root && !pt.RootRevision && len(pt.Replies) > 0) {
				continue
			}
		}
		keep = append(keep, evt)
		ids = append(ids, evt.ID)
	}
	var statuses []*nostr.Event
	if len(ids) > 0 {
		statuses, err = p.query(ctx, nostr.Filter{Kinds: []int{nip34.KindStatusOpen, nip34.KindStatusMerged, nip34.KindStatusClosed, nip34.KindStatusDraft},
			Tags: nostr.TagMap{"e": ids}, Limit: 10 * maxDiscussions})
		if err != nil {
			return nil, err
		}
	}
	byRoot := map[string][]*nostr.Event{}
	for _, s := range statuses {
		if st, err := nip34.ParseStatus(s); err == nil {
			for _, root := range st.Roots {
				byRoot[root] = append(byRoot[root], s)
			}
		}
	}
	out := make([]discussion, 0, len(keep))
	for _, evt := range keep {
		kind := nip34.CurrentStatus(evt.ID, evt.PubKey, m.roster, byRoot[evt.ID])
		d := discussion{ID: evt.ID, Title: titleOf(evt), Author: personOf(evt.PubKey), When: evt.CreatedAt.Time().UTC(),
			Status: statusName(kind, evt.Kind), rank: statusRank(kind)}
		switch evt.Kind {
		case nip34.KindPR:
			d.Kind = "PR"
		case nip34.KindPatch:
			d.Kind = "patch"
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
	return out, nil
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
