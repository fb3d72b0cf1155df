package pages

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/grasp-dev/grasp/core/nip34"
)

// A discussion page (issue, PR, patch series) shows one root event of the
// repository and what was said about it: statuses, labels and subject
// edits, the cover note, reviews and comments. Everything a stranger can
// make large is bounded here: comments and reviews are read up to a limit
// (the newest kept, with a note), the comment tree is shown flattened in
// pages of threadPage with its indentation capped at maxThreadDepth, and
// statuses, labels and cover notes are read only from the keys whose word
// counts (nip34.Roster.Speaks), so nobody else can crowd them out.
const (
	// maxComments bounds the comments (NIP-22 kind 1111, and legacy kind-1
	// replies) read for one discussion.
	maxComments = 1000
	// maxReviews bounds the reviews (7321) read for one PR or patch.
	maxReviews = 200
	// maxAnnotations bounds the statuses, labels and cover notes read from
	// the keys that speak for the root.
	maxAnnotations = 500
	// maxSeries bounds the patches of one series and the updates of one PR.
	maxSeries = 200
	// threadPage is the number of comments on one page of a discussion.
	threadPage = 50
	// maxThreadDepth caps the indentation; deeper replies are shown at it,
	// naming what they answer.
	maxThreadDepth = 6
)

// threadView is what every discussion page shows.
type threadView struct {
	ID, Kind     string // Kind: "issue", "PR", "patch"
	Subject      string
	Status       string // statusName
	Author       person
	When         time.Time
	Body         template.HTML
	Labels       []string
	Cover        *post
	History      []annotation // authorised statuses and renames, oldest first
	Reviews      []review
	ReviewsCut   bool
	Comments     []comment // this page's
	CommentCount int
	CommentsCut  bool // more than maxComments: the oldest are not shown
	Page, Pages  int
	WebClient    string // this discussion in a git-nostr web client
}

// annotation is one line of a history.
type annotation struct {
	What   string // a status ("closed", "merged") or the new subject
	Status string // "" for a rename
	By     person
	When   time.Time
	Commit string // a merge status's merge-commit
}

// post is a rendered event: a cover note, a review's text.
type post struct {
	By   person
	When time.Time
	HTML template.HTML
}

type review struct {
	post
	Verdict, Class string
}

// comment is one entry of the flattened comment tree.
type comment struct {
	post
	ID       string
	Depth    int
	ReplyTo  *person // shown when the indentation no longer says it
	ReplyRef string  // link to the comment replied to
	Resolved bool    // GitWorkshop: ["l","resolved"] resolves the thread it answers
	File     string  // inline review comment: path
	Line     string  // and line or range
	Commit   string
}

// thread is the root and the events about it, each one a stranger may read.
type thread struct {
	root                           *nostr.Event
	annotations, comments, reviews []*nostr.Event
	series, updates                []*nostr.Event
	commentsCut, reviewsCut        bool
}

// loadRoot reads the event id and checks that it is a root of one of
// kinds in repository m and readable by anyone; false reads as a 404.
func (p *Pages) loadRoot(ctx context.Context, m repoMeta, id string, kinds ...int) (*nostr.Event, bool, error) {
	if !nip34.IsHex64(id) {
		return nil, false, nil
	}
	evs, err := p.query(ctx, nostr.Filter{IDs: []string{id}, Kinds: kinds, Limit: 1})
	if err != nil || len(evs) == 0 {
		return nil, false, err
	}
	root := evs[0]
	inRepo := false
	for _, a := range root.Tags {
		if len(a) >= 2 && a[0] == "a" && slices.Contains(m.Coordinates, a[1]) {
			inRepo = true
			break
		}
	}
	return root, inRepo && p.public(ctx, root), nil
}

// loadThread reads what was said about root.
func (p *Pages) loadThread(ctx context.Context, m repoMeta, root *nostr.Event) (*thread, error) {
	t := &thread{root: root}
	speakers := m.speakers()
	if !slices.Contains(speakers, root.PubKey) {
		speakers = append(speakers, root.PubKey)
	}
	type read struct {
		f   nostr.Filter
		n   int
		out *[]*nostr.Event
		cut *bool
	}
	byE := nostr.TagMap{"e": {root.ID}}
	byUpperE := nostr.TagMap{"E": {root.ID}}
	var legacy []*nostr.Event
	var legacyCut bool
	reads := []read{
		{nostr.Filter{Kinds: []int{nip34.KindStatusOpen, nip34.KindStatusMerged, nip34.KindStatusClosed, nip34.KindStatusDraft, nip34.KindLabel, nip34.KindCoverNote},
			Tags: byE, Authors: speakers}, maxAnnotations, &t.annotations, nil},
		{nostr.Filter{Kinds: []int{nip34.KindComment}, Tags: byUpperE}, maxComments, &t.comments, &t.commentsCut},
		{nostr.Filter{Kinds: []int{nip34.KindNote}, Tags: byE}, maxComments, &legacy, &legacyCut},
	}
	switch root.Kind {
	case nip34.KindPR:
		reads = append(reads,
			read{nostr.Filter{Kinds: []int{nip34.KindPRUpdate}, Tags: byUpperE, Authors: speakers}, maxSeries, &t.updates, nil},
			read{nostr.Filter{Kinds: []int{nip34.KindReview}, Tags: byE}, maxReviews, &t.reviews, &t.reviewsCut})
	case nip34.KindPatch:
		// a series is its author's: nobody else can slip a patch into it
		reads = append(reads,
			read{nostr.Filter{Kinds: []int{nip34.KindPatch}, Tags: byE, Authors: []string{root.PubKey}}, maxSeries, &t.series, nil},
			read{nostr.Filter{Kinds: []int{nip34.KindReview}, Tags: byE}, maxReviews, &t.reviews, &t.reviewsCut})
	}
	for _, rd := range reads {
		evs, more, err := p.queryUpTo(ctx, rd.f, rd.n)
		if err != nil {
			return nil, err
		}
		if rd.cut != nil {
			*rd.cut = more
		}
		*rd.out = p.publicOnly(ctx, evs)
	}
	t.comments = append(t.comments, legacy...)
	t.commentsCut = t.commentsCut || legacyCut
	if len(t.comments) > maxComments {
		sort.Slice(t.comments, func(i, j int) bool { return nip34.LaterEvent(t.comments[i], t.comments[j]) })
		t.comments, t.commentsCut = t.comments[:maxComments], true
	}
	return t, nil
}

// view builds what the page shows of t: rendered bodies for the root, the
// cover note, the reviews and the comments on page (1-based).
func (p *Pages) view(r *http.Request, m repoMeta, t *thread, tab string, page int) threadView {
	ctx := r.Context()
	root := t.root
	v := threadView{ID: root.ID, Author: personOf(root.PubKey), When: root.CreatedAt.Time().UTC()}
	v.Kind = nip34.KindName(root.Kind) // an issue, PR or patch (loadRoot)
	var statuses, labels []*nostr.Event
	for _, e := range t.annotations {
		switch {
		case nip34.IsStatusKind(e.Kind):
			statuses = append(statuses, e)
		case e.Kind == nip34.KindLabel:
			labels = append(labels, e)
		}
	}
	v.Status = statusName(nip34.CurrentStatus(root.ID, root.PubKey, m.roster, statuses), root.Kind)
	var renames []*nostr.Event
	v.Labels, v.Subject, renames = nip34.Labels(root, m.roster, labels)
	if v.Subject == "" {
		v.Subject = titleOf(root)
	}
	if root.Kind != nip34.KindPatch {
		v.Body = p.eventHTML(ctx, r, root)
	}
	if c := nip34.CurrentCoverNote(root.ID, root.PubKey, m.roster, t.annotations); c != nil {
		v.Cover = &post{By: personOf(c.PubKey), When: c.CreatedAt.Time().UTC(), HTML: p.eventHTML(ctx, r, c)}
	}
	v.History = history(root, m.roster, statuses, renames)
	for _, e := range nip34.CurrentReviews(root.ID, t.reviews) {
		rv, _ := nip34.ParseReview(e)
		v.Reviews = append(v.Reviews, review{post: post{By: personOf(e.PubKey), When: e.CreatedAt.Time().UTC(), HTML: p.eventHTML(ctx, r, e)},
			Verdict: rv.Verdict, Class: verdictClass(rv.Verdict)})
	}
	v.ReviewsCut = t.reviewsCut
	flat := flatten(root.ID, t.comments)
	v.CommentCount, v.CommentsCut = len(flat), t.commentsCut
	v.Pages = max(1, (len(flat)+threadPage-1)/threadPage)
	v.Page = min(max(page, 1), v.Pages)
	pageOf := map[string]int{}
	for i, c := range flat {
		pageOf[c.evt.ID] = i/threadPage + 1
	}
	for _, c := range flat[(v.Page-1)*threadPage : min(len(flat), v.Page*threadPage)] {
		e := c.evt
		cm := comment{post: post{By: personOf(e.PubKey), When: e.CreatedAt.Time().UTC(), HTML: p.eventHTML(ctx, r, e)},
			ID: e.ID, Depth: c.depth, File: firstTag(e, "f"), Line: firstTag(e, "line"), Commit: firstTag(e, "c")}
		for _, l := range e.Tags {
			if len(l) >= 2 && l[0] == "l" && l[1] == "resolved" {
				cm.Resolved = true
			}
		}
		if c.parent != nil && (c.clipped || pageOf[c.parent.ID] != v.Page) {
			who := personOf(c.parent.PubKey)
			cm.ReplyTo = &who
			cm.ReplyRef = "?page=" + strconv.Itoa(pageOf[c.parent.ID]) + "#c-" + c.parent.ID
		}
		v.Comments = append(v.Comments, cm)
	}
	if nevent, err := nip19.EncodeEvent(root.ID, firstN(m.Relays, 2), root.PubKey); err == nil {
		v.WebClient = m.WebClientURL + "/" + tab + "/" + nevent
	}
	return v
}

// history is what happened to root, oldest first: the statuses by keys
// that speak for it (the only ones read) and its renames.
func history(root *nostr.Event, ro nip34.Roster, statuses, renames []*nostr.Event) []annotation {
	var evs []*nostr.Event
	for _, s := range statuses {
		if st, err := nip34.ParseStatus(s); err == nil && slices.Contains(st.Roots, root.ID) && ro.Speaks(s.PubKey, root.PubKey) {
			evs = append(evs, s)
		}
	}
	evs = append(evs, renames...)
	sort.Slice(evs, func(i, j int) bool { return nip34.LaterEvent(evs[j], evs[i]) })
	out := make([]annotation, 0, len(evs))
	for _, e := range evs {
		a := annotation{By: personOf(e.PubKey), When: e.CreatedAt.Time().UTC()}
		if e.Kind == nip34.KindLabel {
			l, _ := nip34.ParseLabel(e)
			a.What = l.Values[nip34.LabelNamespaceSubject][0]
		} else {
			st, _ := nip34.ParseStatus(e)
			a.What = statusName(e.Kind, root.Kind)
			a.Status, a.Commit = a.What, st.MergeCommit
		}
		out = append(out, a)
	}
	return out
}

// flatEntry is a comment in display order.
type flatEntry struct {
	evt     *nostr.Event
	parent  *nostr.Event // nil: answers the root
	depth   int
	clipped bool // deeper than maxThreadDepth
}

// flatten orders comments as a tree under rootID: each reply after what it
// answers, siblings oldest first; a comment whose parent is not among them
// answers the root. It walks with an explicit stack, so a deep chain costs
// no recursion.
func flatten(rootID string, comments []*nostr.Event) []flatEntry {
	byID := make(map[string]*nostr.Event, len(comments))
	for _, e := range comments {
		byID[e.ID] = e
	}
	children := map[string][]*nostr.Event{}
	for _, e := range comments {
		parent := parentOf(e, rootID)
		if _, ok := byID[parent]; !ok || parent == e.ID {
			parent = rootID
		}
		children[parent] = append(children[parent], e)
	}
	for _, kids := range children {
		sort.Slice(kids, func(i, j int) bool { return nip34.LaterEvent(kids[j], kids[i]) })
	}
	out := make([]flatEntry, 0, len(comments))
	type frame struct {
		evt   *nostr.Event
		depth int
	}
	var stack []frame
	push := func(parent string, depth int) {
		kids := children[parent]
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, frame{kids[i], depth})
		}
	}
	push(rootID, 0)
	seen := map[string]bool{}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[f.evt.ID] {
			continue
		}
		seen[f.evt.ID] = true
		fe := flatEntry{evt: f.evt, depth: min(f.depth, maxThreadDepth), clipped: f.depth > maxThreadDepth}
		if parent := parentOf(f.evt, rootID); parent != rootID {
			fe.parent = byID[parent]
		}
		out = append(out, fe)
		push(f.evt.ID, f.depth+1)
	}
	return out
}

// parentOf is the event a comment answers: NIP-22's lowercase `e` for a
// 1111, NIP-10's "reply" marker (else the last `e`) for a kind-1 reply.
func parentOf(e *nostr.Event, rootID string) string {
	if e.Kind == nip34.KindComment {
		if c, err := nip34.ParseComment(e); err == nil && len(c.ParentIDs) > 0 {
			return c.ParentIDs[0]
		}
		return rootID
	}
	last := rootID
	for _, t := range e.Tags {
		if len(t) < 2 || t[0] != "e" || !nip34.IsHex64(t[1]) {
			continue
		}
		if len(t) >= 4 && t[3] == "reply" {
			return t[1]
		}
		if len(t) < 4 || t[3] != "root" {
			last = t[1]
		}
	}
	return last
}

func firstTag(e *nostr.Event, name string) string {
	if t := e.Tags.Find(name); len(t) > 1 {
		return t[1]
	}
	return ""
}

func verdictClass(v string) string {
	switch v {
	case "ACK", "Concept ACK":
		return "open"
	case "NACK", "Concept NACK":
		return "closed"
	}
	return "draft"
}

// public reports whether anyone may read evt (GRASP-08: a visitor of a
// page is not authenticated, so only what the reader check admits without
// a key is shown).
func (p *Pages) public(ctx context.Context, evt *nostr.Event) bool {
	return p.opts.Readers == nil || p.opts.Readers(ctx, evt) == nil
}

// publicOnly keeps the events anyone may read.
func (p *Pages) publicOnly(ctx context.Context, evs []*nostr.Event) []*nostr.Event {
	out := evs[:0]
	for _, e := range evs {
		if p.public(ctx, e) {
			out = append(out, e)
		}
	}
	return out
}

// threadPageOf reads ?page= (1 when absent or malformed).
func threadPageOf(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// threadParts are the pieces every discussion page shows: "top" (subject,
// status, author, labels, cover note) and "bottom" (history, reviews,
// comments with their pages). They are executed with the page's data,
// whose T is the threadView.
const threadParts = `{{define "top"}}{{with .T}}<h2 class="subject">{{.Subject}}</h2>
<p><span class="badge st-{{.Status}}">{{.Status}}</span> {{.Kind}} by <code title="{{.Author.Npub}}">{{.Author.Short}}</code>, {{date .When}}{{if .WebClient}} · <a href="{{.WebClient}}" rel="nofollow">open in a git-nostr client</a>{{end}}</p>
{{if .Labels}}<p class="labels">{{range .Labels}}<span class="badge">{{.}}</span> {{end}}</p>{{end}}
{{with .Cover}}<div class="post cover"><p class="muted">Cover note by <code title="{{.By.Npub}}">{{.By.Short}}</code>, {{date .When}}</p>{{.HTML}}</div>{{end}}
{{end}}{{end}}
{{define "bottom"}}{{with .T}}{{if .History}}<h2>History</h2>
<ul class="plain history">{{range .History}}<li>{{if .Status}}<span class="badge st-{{.Status}}">{{.What}}</span>{{else}}renamed to “{{.What}}”{{end}} by <code title="{{.By.Npub}}">{{.By.Short}}</code>, {{date .When}}{{if .Commit}} · merge commit <a href="{{$.R.Base}}/commit/{{.Commit}}"><code>{{.Commit}}</code></a>{{end}}</li>
{{end}}</ul>{{end}}
{{if .Reviews}}<h2 id="reviews">Reviews ({{len .Reviews}})</h2>
{{if .ReviewsCut}}<p class="muted">Only the latest reviews were read.</p>{{end}}
{{range .Reviews}}<div class="post review"><p><span class="badge st-{{.Class}}">{{.Verdict}}</span> by <code title="{{.By.Npub}}">{{.By.Short}}</code>, {{date .When}}</p>{{.HTML}}</div>
{{end}}{{end}}
<h2 id="comments">Comments ({{.CommentCount}})</h2>
{{if .CommentsCut}}<p class="muted">This discussion has more comments than a page reads; the oldest are not shown.</p>{{end}}
{{if not .Comments}}<p class="muted">No comments yet.</p>{{end}}
{{range .Comments}}<div class="comment d{{.Depth}}" id="c-{{.ID}}"><p class="muted"><code title="{{.By.Npub}}">{{.By.Short}}</code>, {{date .When}}{{if .ReplyTo}} · in reply to <a href="{{.ReplyRef}}">{{.ReplyTo.Short}}</a>{{end}}{{if .File}} · on <code>{{.File}}{{if .Line}}:{{.Line}}{{end}}</code>{{end}}{{if .Resolved}} · <span class="badge">resolved</span>{{end}} · <a href="#c-{{.ID}}">#</a></p>
{{.HTML}}</div>
{{end}}{{if gt .Pages 1}}<nav class="pager">Page {{.Page}} of {{.Pages}}{{if gt .Page 1}} · <a href="?page={{dec .Page}}#comments">earlier comments</a>{{end}}{{if lt .Page .Pages}} · <a href="?page={{inc .Page}}#comments">later comments</a>{{end}}</nav>{{end}}
{{end}}{{end}}`

func discussionTemplate(name, body string) *template.Template {
	return pageTemplate(name, threadParts+body)
}
