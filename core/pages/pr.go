package pages

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

var prTmpl = diffTemplate("pr", `{{template "head" .}}{{template "top" .}}
<div class="post body">{{if .T.Body}}{{.T.Body}}{{else}}<p class="muted">No description.</p>{{end}}</div>
{{with .G}}<h2 id="commits">Commits{{if .Commits}} ({{len .Commits}}{{if .CommitsCut}}+{{end}}){{end}}</h2>
{{if .Missing}}<p class="muted">{{.Missing}}</p>{{else}}
<p class="muted">Tip <a href="{{$.R.Base}}/commit/{{.Tip}}"><code>{{.Tip}}</code></a>{{if .Base}} on <a href="{{$.R.Base}}/commit/{{.Base}}"><code>{{.BaseShort}}</code></a>{{end}}{{if .Revisions}} · revision {{.Revisions}}{{end}}</p>
<pre>git fetch {{$.R.CloneURL}} {{.Ref}}</pre>
{{if .Commits}}<div class="scroll"><table>{{range .Commits}}<tr><td><a href="{{$.R.Base}}/commit/{{.OID}}"><code>{{.Short}}</code></a></td><td>{{.Subject}}</td><td class="muted">{{.Author}}</td><td class="muted">{{date .When}}</td></tr>{{end}}</table></div>
{{if .CommitsCut}}<p class="muted">Only the first {{len .Commits}} commits are listed.</p>{{end}}{{end}}
{{if .Base}}<h2 id="files">Files changed</h2>
{{template "files" .Diff}}{{template "diff" .Diff}}{{else}}<p class="muted">The repository has no branch this PR could be compared with.</p>{{end}}{{end}}{{end}}
{{template "bottom" .}}`)

// diffTemplate is a discussion page that shows a diff.
func diffTemplate(name, body string) *template.Template {
	return discussionTemplate(name, diffParts+body)
}

// maxPRCommits bounds the commits listed on a PR page.
const maxPRCommits = 250

// prGit is what git says about a PR: its commits over the base, and the
// diff.
type prGit struct {
	Tip, Base, BaseShort, Ref string
	Revisions                 int // PR updates counted, 0 for none
	Commits                   []commitInfo
	CommitsCut                bool
	Diff                      diffView
	Missing                   string // why there is nothing to show
}

func (g prGit) size() int {
	n := g.Diff.size()
	for _, c := range g.Commits {
		n += len(c.Subject) + len(c.Author) + len(c.Email) + len(c.Body) + 200
	}
	return n
}

// prPage serves /<repo>/prs/<event id>: a PR (1618) with its description,
// commits, diff and reviews, or a patch series (1617, patchPage).
func (p *Pages) prPage(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, id string) {
	ctx := r.Context()
	rv := p.repoView(ctx, repo, "prs")
	root, ok, err := p.loadRoot(ctx, rv.Meta, id, nip34.KindPR, nip34.KindPatch)
	if err != nil {
		p.eventsError(w, r, err)
		return
	}
	if !ok {
		p.errorPage(w, r, http.StatusNotFound, "This repository has no such pull request or patch on this relay.")
		return
	}
	t, err := p.loadThread(ctx, rv.Meta, root)
	if err != nil {
		p.eventsError(w, r, err)
		return
	}
	tv := p.view(r, rv.Meta, t, "prs", threadPageOf(r))
	crumbs := p.crumbs(rv, link{Text: "pull requests and patches", Href: rv.Base + "/prs"}, link{Text: tv.Subject})
	if root.Kind == nip34.KindPatch {
		p.patchPage(w, r, rv, t, tv, crumbs)
		return
	}
	g, err := p.prGit(ctx, repo, rv.Meta, root, t.updates)
	if err != nil {
		p.gitError(w, r, err)
		return
	}
	d := struct {
		R repoView
		T threadView
		G prGit
	}{R: rv, T: tv, G: g}
	p.render(w, r, http.StatusOK, tv.Subject, crumbs, prTmpl, d)
}

// prGit finds the PR's current tip (its latest update by its author or a
// maintainer), the base it is compared with (its merge-base tag, else
// where it leaves HEAD), and reads commits and diff between them, cached
// by the two commits.
func (p *Pages) prGit(ctx context.Context, repo nip34.RepoRef, m repoMeta, root *nostr.Event, updates []*nostr.Event) (prGit, error) {
	cur := root
	var g prGit
	for _, u := range updates {
		if u.PubKey != root.PubKey && !m.roster.Has(u.PubKey) {
			continue
		}
		if _, err := nip34.ParsePR(u); err != nil {
			continue
		}
		g.Revisions++
		if nip34.LaterEvent(u, cur) {
			cur = u
		}
	}
	pr, err := nip34.ParsePR(cur)
	if err != nil {
		g.Missing = "This PR names no commit (" + err.Error() + ")."
		return g, nil
	}
	g.Tip, g.Ref = pr.Tip, "refs/nostr/"+cur.ID
	if g.Revisions > 0 {
		g.Revisions++ // the PR itself is the first
	}
	if !p.isCommit(ctx, repo, pr.Tip) {
		g.Missing = "The commits of this PR have not reached this server (its tip " + pr.Tip + " is not in the repository)."
		return g, nil
	}
	st, err := p.state(ctx, repo)
	if err != nil {
		return g, err
	}
	switch {
	case pr.MergeBase != "" && p.isCommit(ctx, repo, pr.MergeBase):
		g.Base = pr.MergeBase
	case st.headOID != "":
		out, err := p.read(ctx, repo, 128, "merge-base", st.headOID, pr.Tip)
		if b := strings.TrimSpace(string(out)); err == nil && nip34.IsObjectID(b) {
			g.Base = b
		}
	}
	if g.Base != "" {
		g.BaseShort = g.Base[:10]
	}
	key := "pr|" + repo.String() + "|" + g.Base + "|" + g.Tip
	if v, ok := p.cache.get(key); ok {
		c := v.(prGit)
		c.Ref, c.Revisions = g.Ref, g.Revisions
		return c, nil
	}
	args := []string{"log", "--no-color", logFormat, "-n", strconv.Itoa(maxPRCommits + 1), g.Tip}
	if g.Base != "" {
		args = append(args, "^"+g.Base)
	}
	out, err := p.read(ctx, repo, 1<<20, append(args, "--")...)
	if err != nil && !errors.Is(err, git.ErrReadTruncated) {
		return g, err
	}
	g.Commits = parseCommits(out)
	if len(g.Commits) > maxPRCommits {
		g.Commits, g.CommitsCut = g.Commits[:maxPRCommits], true
	}
	if g.Base != "" {
		if g.Diff, err = p.diffBetween(ctx, repo, g.Base, g.Tip); err != nil {
			return g, err
		}
	}
	p.cache.put(key, g, g.size())
	return g, nil
}

// isCommit reports whether the repository has commit oid.
func (p *Pages) isCommit(ctx context.Context, repo nip34.RepoRef, oid string) bool {
	if !nip34.IsObjectID(oid) {
		return false
	}
	t, err := p.read(ctx, repo, 64, "cat-file", "-t", oid)
	return err == nil && strings.TrimSpace(string(t)) == "commit"
}
