package pages

import (
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"github.com/grasp-dev/grasp/core/nip34"
)

var patchTmpl = diffTemplate("patch", `{{template "head" .}}{{template "top" .}}
<h2 id="patches">Patches ({{len .Patches}})</h2>
<ol class="patches">{{range .Patches}}<li><a href="#{{.Anchor}}">{{.Subject}}</a>{{if .Commit}} <span class="muted"><code>{{.Short}}</code></span>{{end}}</li>{{end}}</ol>
{{if .Revisions}}<p>Revisions of this series: {{range $i, $r := .Revisions}}{{if $i}}, {{end}}<a href="{{$.R.Base}}/prs/{{$r.ID}}">{{$r.Subject}}</a>{{end}}</p>{{end}}
<h2 id="files">Files changed</h2>
{{template "files" .Diff}}{{template "diff" .Diff}}
{{if .Cut}}<p class="muted">Only the first {{len .Patches}} patches are shown.</p>{{end}}
{{template "bottom" .}}`)

type patchEntry struct {
	ID, Subject, Commit, Short, Anchor string
}

// patchPage shows a patch series (kind 1617): the root patch and the
// patches its author published in reply to it, in order, as one diff
// with a file list; revisions (["t","root-revision"]) are linked.
func (p *Pages) patchPage(w http.ResponseWriter, r *http.Request, rv repoView, t *thread, tv threadView, crumbs []link) {
	series := []*nostr.Event{t.root}
	var revisions []patchEntry
	for _, e := range t.series {
		if pt, err := nip34.ParsePatch(e); err == nil && pt.RootRevision {
			revisions = append(revisions, patchEntry{ID: e.ID, Subject: titleOf(e)})
			continue
		}
		series = append(series, e)
	}
	sort.SliceStable(series, func(i, j int) bool {
		ni, nj := patchNumber(series[i]), patchNumber(series[j])
		if ni != nj {
			return ni < nj
		}
		return nip34.LaterEvent(series[j], series[i])
	})
	d := struct {
		R         repoView
		T         threadView
		Patches   []patchEntry
		Revisions []patchEntry
		Diff      diffView
		Cut       bool
	}{R: rv, T: tv, Revisions: revisions}
	d.Diff.Max = int64(p.opts.MaxDiffBytes)
	budget := p.opts.MaxDiffBytes
	byPath := map[string]int{}
	for i, e := range series {
		content := e.Content
		if len(content) > budget {
			content, d.Diff.Truncated = content[:budget], true
		}
		budget -= len(content)
		pe := patchEntry{ID: e.ID, Subject: titleOf(e), Anchor: "p-" + strconv.Itoa(i)}
		if pt, err := nip34.ParsePatch(e); err == nil && pt.Commit != "" {
			pe.Commit, pe.Short = pt.Commit, pt.Commit[:min(10, len(pt.Commit))]
		}
		d.Patches = append(d.Patches, pe)
		files := patchStats(content)
		rows := diffRows(content, files)
		for j := range rows {
			if rows[j].ID != "" {
				rows[j].ID = pe.Anchor + "-" + rows[j].ID
			}
		}
		for j := range files {
			if files[j].Anchor != "" {
				files[j].Anchor = pe.Anchor + "-" + files[j].Anchor
			}
		}
		d.Diff.Rows = append(d.Diff.Rows, diffRow{Class: "meta", Text: "Patch " + strconv.Itoa(i+1) + ": " + pe.Subject, ID: pe.Anchor})
		d.Diff.Rows = append(d.Diff.Rows, rows...)
		for _, f := range files {
			d.Diff.Added += f.Add
			d.Diff.Deleted += f.Del
			if k, ok := byPath[f.Path]; ok {
				d.Diff.Files[k].Add += f.Add
				d.Diff.Files[k].Del += f.Del
				d.Diff.Files[k].Binary = d.Diff.Files[k].Binary || f.Binary
				continue
			}
			if len(d.Diff.Files) == maxDiffFiles {
				d.Diff.FilesCut = true
				continue
			}
			byPath[f.Path] = len(d.Diff.Files)
			d.Diff.Files = append(d.Diff.Files, f)
		}
		if budget <= 0 {
			d.Cut = i < len(series)-1
			break
		}
	}
	p.render(w, r, http.StatusOK, tv.Subject, crumbs, patchTmpl, d)
}

var patchNumberRe = regexp.MustCompile(`^Subject: \[[^\]]*?(\d+)/\d+\]`)

// patchNumber is n of a "Subject: [PATCH n/m]" line, 0 without one (a
// single patch, or a cover letter numbered 0/m).
func patchNumber(e *nostr.Event) int {
	for _, l := range strings.SplitN(e.Content, "\n", 40) {
		if m := patchNumberRe.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 0
}
