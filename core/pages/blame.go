package pages

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grasp-dev/grasp/core/git"
	"github.com/grasp-dev/grasp/core/nip34"
)

// Blame (cgit's and Forgejo's): each line of a file with the commit that
// last changed it. Its cost is one git process whose time grows with the
// file's history, so it is bounded like the other git reads of the pages
// (a MaxGitReads slot, blameTimeout, blameMaxBytes of output) and like a
// file view (MaxFileBytes, maxCodeLines), and its result is cached by the
// commit and path, which never change meaning: a result that ran out of
// time is cached too, so a crawler asking again costs nothing.

// blameTimeout stops a blame whose history is too long to walk for a page.
const blameTimeout = 10 * time.Second

// blameMaxBytes bounds git blame --incremental's output: a line of about
// 60 bytes per group of lines and the commit's headers (about 500 bytes)
// once per commit, so maxCodeLines lines each from another commit fit.
const blameMaxBytes = 8 << 20

var blameTmpl = pageTemplate("blame", whereTmpl+`{{template "head" .}}
{{template "where" .}}
{{if .Binary}}<p class="muted">Binary file, not shown. <a href="{{.Raw}}?download">Download it</a>.</p>
{{else if .TooLarge}}<p class="muted">This file is {{size .Size}}; files over {{size .Max}} are not blamed here. <a href="{{.Raw}}">Read it raw</a>.</p>
{{else}}{{with .Blame}}{{if .TooLong}}<p class="muted">This file's history could not be walked within {{.Limit}}; its lines are shown without their commits. <a href="{{$.R.Base}}/commits/{{path $.Rev}}/{{path $.Path}}">Its history</a> lists the commits that changed it.</p>{{end}}
<pre class="code blame">{{.Lines}}</pre>
{{if .Cut}}<p class="muted">Only the first {{.Cut}} lines are blamed. <a href="{{$.Raw}}">Read it raw</a>.</p>{{end}}{{end}}{{end}}`)

// blameView is a blamed file as the page shows it.
type blameView struct {
	Lines   template.HTML
	Cut     int  // the lines shown when the file has more (maxCodeLines), else 0
	TooLong bool // git did not finish within blameTimeout
	Limit   string
}

// blameGroup is a run of lines last changed by one commit.
type blameGroup struct {
	commit      string
	first, size int // 1-based final line and the number of lines
}

// blameCommit is what a line's annotation says of its commit.
type blameCommit struct {
	author, summary string
	when            time.Time
}

// blame serves blame/<rev>/<path>.
func (p *Pages) blame(w http.ResponseWriter, r *http.Request, repo nip34.RepoRef, rest string) {
	ctx := r.Context()
	st, rev, oid, path, self, ok := p.fileAt(w, r, repo, rest, "A blame is of one file: blame/<branch, tag or commit>/<path>.")
	if !ok {
		return
	}
	d := browseData{Rev: rev, RevKind: revKind(st, rev), Path: path, Max: int64(p.opts.MaxFileBytes), Size: self.Size, Blaming: true}
	segs := strings.Split(path, "/")
	for i := range segs[:len(segs)-1] {
		d.Up = append(d.Up, link{Text: segs[i], Href: strings.Join(segs[:i+1], "/")})
	}
	d.Name = segs[len(segs)-1]
	d.R = p.repoView(ctx, repo, "tree")
	d.Raw = d.R.Base + "/raw/" + escapePath(rev) + "/" + escapePath(path)
	if self.Size > int64(p.opts.MaxFileBytes) {
		d.TooLarge = true
	} else {
		data, err := p.cachedBlob(ctx, repo, self.OID)
		if err != nil {
			p.gitError(w, r, err)
			return
		}
		if d.Binary = binary(data); !d.Binary {
			v, err := p.cachedBlame(ctx, repo, oid, path, data, d.R.Base)
			if err != nil {
				p.gitError(w, r, err)
				return
			}
			d.Blame = &v
		}
	}
	p.render(w, r, http.StatusOK, d.R.Meta.Name+": blame of "+path, p.crumbs(d.R, link{Text: rev}), blameTmpl, d)
}

// cachedBlame is the blame of path at the commit-ish oid, whose content is
// src, keyed by both; concurrent views share one git process.
func (p *Pages) cachedBlame(ctx context.Context, repo nip34.RepoRef, oid, path string, src []byte, base string) (blameView, error) {
	key := "blame|" + repo.String() + "|" + oid + "|" + path
	v, err := p.cache.load(ctx, key, func(ctx context.Context) (any, int, error) {
		v, err := p.blameOf(ctx, repo, oid, path, src, base)
		return v, len(v.Lines) + 64, err
	})
	if err != nil {
		return blameView{}, err
	}
	return v.(blameView), nil
}

func (p *Pages) blameOf(ctx context.Context, repo nip34.RepoRef, oid, path string, src []byte, base string) (blameView, error) {
	v := blameView{Limit: blameTimeout.String()}
	if cut := firstLines(src, maxCodeLines); len(cut) < len(src) {
		src, v.Cut = cut, maxCodeLines
	}
	lines := splitLines(src)
	args := []string{"blame", "--incremental"}
	if v.Cut > 0 {
		args = append(args, "-L", "1,"+strconv.Itoa(maxCodeLines))
	}
	args = append(args, oid, "--", path)
	// the time runs from the slot on: waiting for one is not the
	// history's length
	release, err := p.slot(ctx)
	if err != nil {
		return v, err
	}
	defer release()
	p.gitReads.WithLabelValues("blame").Inc()
	bctx, cancel := context.WithTimeout(ctx, blameTimeout)
	defer cancel()
	out, err := p.opts.Repos.Read(bctx, repo, git.ReadLimits{MaxBytes: blameMaxBytes, Timeout: blameTimeout + time.Second}, nil, args...)
	switch {
	case err != nil && ctx.Err() != nil:
		return v, ctx.Err()
	case err != nil && bctx.Err() != nil, errors.Is(err, git.ErrReadTruncated):
		// the history is too long for a page: the lines without commits,
		// remembered like a result
		v.TooLong = true
		v.Lines = blameLines(lines, nil, nil, base)
		return v, nil
	case err != nil:
		return v, err
	}
	groups, commits := parseBlame(out)
	v.Lines = blameLines(lines, groups, commits, base)
	return v, nil
}

// parseBlame reads git blame --incremental: each group starts with
// "<commit> <original line> <final line> <lines>", the commit's headers
// follow the first time it is named, and "filename" ends the group.
func parseBlame(out []byte) ([]blameGroup, map[string]*blameCommit) {
	var groups []blameGroup
	commits := map[string]*blameCommit{}
	var cur *blameCommit
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && nip34.IsObjectID(f[0]) {
			first, err1 := strconv.Atoi(f[2])
			size, err2 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil || first < 1 || size < 1 {
				cur = nil
				continue
			}
			groups = append(groups, blameGroup{commit: f[0], first: first, size: size})
			if cur = commits[f[0]]; cur == nil {
				cur = &blameCommit{}
				commits[f[0]] = cur
			}
			continue
		}
		if cur == nil {
			continue
		}
		k, val, _ := strings.Cut(line, " ")
		switch k {
		case "author":
			cur.author = val
		case "author-time":
			if sec, err := strconv.ParseInt(val, 10, 64); err == nil {
				cur.when = time.Unix(sec, 0).UTC()
			}
		case "summary":
			cur.summary = val
		case "filename":
			cur = nil
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].first < groups[j].first })
	return groups, commits
}

// blameLines writes lines as numbered, anchored lines; the first line of
// each group carries its commit (a link to it, the author, date and
// subject in its title), the group's other lines an empty column.
func blameLines(lines [][]byte, groups []blameGroup, commits map[string]*blameCommit, base string) template.HTML {
	var b strings.Builder
	b.Grow(len(lines) * 120)
	g := 0
	for i, line := range lines {
		n := i + 1
		for g < len(groups) && groups[g].first+groups[g].size <= n {
			g++
		}
		starts := g < len(groups) && groups[g].first == n
		if starts {
			b.WriteString(`<span class="line start" id="L` + strconv.Itoa(n) + `">`)
		} else {
			b.WriteString(`<span class="line" id="L` + strconv.Itoa(n) + `">`)
		}
		b.WriteString(`<span class="bl">`)
		if starts {
			oid := groups[g].commit
			c := commits[oid]
			b.WriteString(`<a href="` + template.HTMLEscapeString(base) + `/commit/` + oid + `" title="`)
			template.HTMLEscape(&b, []byte(c.author+", "+c.when.Format("2006-01-02 15:04")+": "+c.summary))
			b.WriteString(`">` + oid[:7] + `</a> ` + c.when.Format("2006-01-02"))
		}
		b.WriteString(`</span><a class="ln" href="#L` + strconv.Itoa(n) + `">` + strconv.Itoa(n) + `</a>`)
		template.HTMLEscape(&b, line)
		b.WriteString("</span>")
	}
	return template.HTML(b.String())
}

// splitLines is src's lines without their newlines.
func splitLines(src []byte) [][]byte {
	var lines [][]byte
	for len(src) > 0 {
		i := bytes.IndexByte(src, '\n')
		if i < 0 {
			lines = append(lines, src)
			break
		}
		lines = append(lines, src[:i])
		src = src[i+1:]
	}
	return lines
}
